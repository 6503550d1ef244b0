"""One Airflow DAG per release file in releases/ (built by deid.dag_factory).

Adding a release is adding a YAML file there; a bad file fails parsing here
with a message naming the file and the field.  A task's process builds only
its own DAG (``deid.dag_factory.release_dags``).
"""

from deid.dag_factory import release_dags

globals().update(release_dags())
