"""DAG integrity: every DAG file imports, and every DAG carries what operations need."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}, dagbag.import_errors
    assert dagbag.dags, "no DAG found"


def test_every_dag_has_tags_owner_retries_doc(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, f"{dag_id} has no tags"
        assert dag.doc_md, f"{dag_id} has no doc"
        assert dag.max_active_runs == 1, f"{dag_id} must run one at a time"
        for task in dag.tasks:
            assert task.owner and task.owner != "airflow", f"{dag_id}.{task.task_id}: owner"
            assert task.retries is not None, f"{dag_id}.{task.task_id}: retries"


def test_release_dag_order_and_params(dagbag):
    dag = dagbag.get_dag("deid_medco_codes")
    order = ["prepare", "extract", "screen_plan", "screen", "screen_combine",
             "privacy_policy", "medco_cluster_codes",
             "medco_dummies", "validate", "report", "load"]
    for up, down in zip(order, order[1:]):
        assert down in dag.get_task(up).downstream_task_ids, f"{up} -> {down}"
    assert dag.get_task("cleanup").is_teardown
    assert dag.get_task("validate").retries == 0
    # PPE's verifier runs beside the method's steps, and validate waits for it
    assert dag.get_task("verify_policy").upstream_task_ids == {"privacy_policy"}
    assert dag.get_task("verify_policy").downstream_task_ids == {"validate"}
    for name, param in dag.params.items():
        p = dag.params.get_param(name)
        assert p.schema.get("title") and p.description and p.schema.get("section"), name
    assert dag.params.get_param("k").schema["minimum"] == 2
    # the release file fixes the method: its parameters only, no method field
    from deid.methods import param_schemas

    assert set(dag.params) == {"scope", *param_schemas("medco")}
    assert "only make it stronger (larger)" in dag.params.get_param("k").description
    assert "Fixed by the release file" in dag.params.get_param("seed").description


def test_partitioned_steps_are_mapped_tasks(dagbag):
    """Screening, disassociation's VERPART/refining and the HHP lattice search
    run one task per batch."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    dag = dagbag.get_dag("deid_disassociation_diagnoses")
    assert isinstance(dag.get_task("disassociation_disassociate"), MappedOperator)
    assert "disassociation_combine" in dag.get_task("disassociation_disassociate").downstream_task_ids
    # the release tables are verified one task per batch, beside the utility measure
    check = dag.get_task("disassociation_verify_batch")
    assert isinstance(check, MappedOperator)
    assert check.upstream_task_ids == {"disassociation_plan", "disassociation_combine"}
    assert dag.get_task("disassociation_measure").upstream_task_ids == {"disassociation_combine"}
    assert {"disassociation_verify_batch", "disassociation_measure", "verify_policy"} <= \
        dag.get_task("validate").upstream_task_ids
    medco = dagbag.get_dag("deid_medco_codes")
    assert isinstance(medco.get_task("screen"), MappedOperator)
    assert not isinstance(medco.get_task("screen_combine"), MappedOperator)
    hhp = dagbag.get_dag("deid_hhp_claims")
    assert isinstance(hhp.get_task("hhp_search"), MappedOperator)
    assert hhp.get_task("hhp_search").upstream_task_ids == {"hhp_prepare"}


PARSE_AS_A_TASK = """
import gc, json, sys
from airflow.dag_processing.dagbag import DagBag
from airflow.sdk.definitions._internal.dag_parsing_context import (
    _airflow_parsing_context_manager)
dag_id, task_id = (sys.argv[2] or None), (sys.argv[3] or None)
with _airflow_parsing_context_manager(dag_id=dag_id, task_id=task_id):
    bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"dags": sorted(bag.dags), "frozen": gc.get_freeze_count()}))
"""


def _parse_in_a_fresh_process(dag_id: str | None, task_id: str | None = None) -> dict:
    """The DAG file as Airflow parses it: the task runner sets the parsing
    context (a DAG and a task), the DAG processor does not.  A fresh process,
    since a task's parse freezes the collector's objects."""
    import json
    import subprocess
    import sys

    path = os.path.join(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], "releases.py")
    out = subprocess.run([sys.executable, "-c", PARSE_AS_A_TASK, path, dag_id or "",
                          task_id or ""], check=True, capture_output=True, text=True,
                         timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_task_process_builds_only_its_own_dag():
    from deid.releases import load_all

    releases = sorted(r.dag_id for r in load_all())
    everything = _parse_in_a_fresh_process(None)
    assert everything == {"dags": releases, "frozen": 0} and len(releases) > 1
    task = _parse_in_a_fresh_process("deid_medco_codes", "validate")
    assert task["dags"] == ["deid_medco_codes"] and task["frozen"] > 0
    cli = _parse_in_a_fresh_process("deid_medco_codes")  # `airflow dags test`
    assert cli == {"dags": ["deid_medco_codes"], "frozen": 0}


def test_a_release_dag_holds_its_own_method_only(dagbag):
    """The release file fixes the method: no task and no trigger-form section
    of another method in its DAG (issue 24)."""
    from deid.methods import METHODS, param_schemas

    dag = dagbag.get_dag("deid_disassociation_diagnoses")
    others = [m for m in METHODS if m != "disassociation"]
    foreign = [t.task_id for t in dag.tasks
               if any(t.task_id.startswith(f"{m}_") for m in others)]
    assert not foreign, foreign
    assert any(t.task_id.startswith("disassociation_") for t in dag.tasks)
    sections = {dag.params.get_param(n).schema.get("section") for n in dag.params}
    titles = {METHODS[m].TITLE for m in others} - {METHODS["disassociation"].TITLE}
    assert not sections & titles, sections & titles
    mine = set(param_schemas("disassociation"))
    for m in others:  # no parameter only another method declares
        assert not (set(param_schemas(m)) - mine) & set(dag.params), m
