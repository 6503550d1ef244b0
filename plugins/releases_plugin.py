"""Airflow plugin: the "Releases" view in the Airflow UI's navigation."""

from airflow.plugins_manager import AirflowPlugin

from deid.releases_view import app


class DeidReleasesPlugin(AirflowPlugin):
    name = "deid_releases"
    fastapi_apps = [{"app": app, "url_prefix": "/deid", "name": "De-identified releases"}]
    external_views = [{"name": "Releases", "href": "deid/releases", "destination": "nav",
                       "category": "browse", "url_route": "releases"}]
