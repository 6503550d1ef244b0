"""A release file's utility floor fails the run before load (issue 23):
a MedCo release whose file bounds the real ratio below what the dummies
need is refused at validate, loads nothing and is audited as failed."""

from __future__ import annotations

import os

import pytest
import yaml
from deid import staging
from tools.demo_data import load_synthetic

from tests.dags.release_copies import write_copies

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]


@pytest.fixture(scope="module")
def floor_dag(tmp_path_factory, warehouse):
    """Only the tests' medco copy, under another name and table, with a
    utility threshold no release with dummies can meet (real ratio <= 1)."""
    folder = write_copies(tmp_path_factory.mktemp("releases"))
    raw = yaml.safe_load((folder / "medco_codes.yaml").read_text())
    for path in folder.glob("*.yaml"):
        path.unlink()
    raw.update(name="medco_floor", thresholds={"max_real_ratio": 1.0},
               destination={"table": "medco_floor"})
    (folder / "medco_floor.yaml").write_text(yaml.safe_dump(raw))
    mp = pytest.MonkeyPatch()
    mp.setenv("DEID_RELEASES_DIR", str(folder))
    mp.setenv("AIRFLOW_VAR_DEID_TOKEN_KEY",
              os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY", "test-key-not-secret"))
    load_synthetic(n_members=300, seed=5, replace=True)
    from airflow.dag_processing.dagbag import DagBag

    try:
        yield DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
            "deid_medco_floor")
    finally:
        mp.undo()


def test_a_utility_threshold_fails_the_run_before_load(floor_dag, warehouse):
    run = floor_dag.test(run_conf={"scope": "TRUE"})
    assert str(run.state).endswith("failed")
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('release.medco_floor')")
        assert cur.fetchone()[0] is None  # nothing loaded
        cur.execute("SELECT outcome, error, metrics FROM audit.release_runs "
                    "WHERE release_name = 'medco_floor' AND run_id = %s", (run.run_id,))
        (outcome, error, metrics), = cur.fetchall()
    assert outcome == "failed" and "real_ratio" in error and "1.0" in error
    assert metrics is None or metrics.get("medco", {}).get("real_ratio", 2) > 1.0
    assert not staging.run_dir("medco_floor", run.run_id, create=False).exists()
