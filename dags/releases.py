"""One Airflow DAG per release file in releases/ (built by deid.dag_factory).

Adding a release is adding a YAML file there; a bad file fails parsing here
with a message naming the file and the field.
"""

from deid.dag_factory import build_dag
from deid.releases import load_all

for _release in load_all():
    globals()[_release.dag_id] = build_dag(_release)
