"""The Airflow-facing side of the pipeline: warehouse I/O, staging, validation,
load and audit.  DAG files call the functions in ``deid.steps``."""
