"""One Airflow DAG per release file in releases/ (built by deid.dag_factory),
and deid_maintenance, which closes what killed runs left open (deid.sweep).

Adding a release is adding a YAML file there; a bad file fails parsing here
with a message naming the file and the field.  A task's process builds only
its own DAG (``deid.dag_factory.release_dags``).
"""

from deid.dag_factory import maintenance_dag, release_dags

globals().update(release_dags())
deid_maintenance = maintenance_dag()
