"""One Airflow DAG per release file in releases/ (built by deid.dag_factory).

Adding a release is adding a YAML file there; a bad file fails parsing here
with a message naming the file and the field.

A task's process parses this file again before it runs, and needs only its
own DAG: Airflow names that DAG in the parsing context, and only it is built
(Airflow's "optimizing DAG parsing delays during execution").  Every release
file is still read and checked.
"""

import gc

from airflow.sdk import get_parsing_context

from deid.dag_factory import build_dag
from deid.releases import load_all

_context = get_parsing_context()
for _release in load_all():
    if _context.dag_id in (None, _release.dag_id):
        globals()[_release.dag_id] = build_dag(_release)

if _context.task_id is not None:
    # A task's process (the CLI's `dags test` names no task): its modules and
    # DAG live until it exits, so the collector need not walk them again on
    # every full collection.
    gc.freeze()
