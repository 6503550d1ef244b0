"""The Airflow DAG deid_maintenance: hourly, closes the audit rows and
deletes the staging of release runs killed before they could (built by
deid.dag_factory; the sweep is deid.sweep).  The words "Airflow" and "DAG"
must stay in this file: Airflow's safe mode parses only files that have them."""

from deid.dag_factory import maintenance_dags

globals().update(maintenance_dags())
