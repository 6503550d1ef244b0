"""A release file's utility bound fails the run before load (issue 23):
a MedCo release whose file bounds the real ratio below what the dummies
need, and an LDA release whose file asks for more ICD values at the 3-digit
level than any release keeps (a ``min_`` floor), are refused at validate,
load nothing and are audited as failed."""

from __future__ import annotations

import os

import pytest
import yaml
from deid import staging

from tests.dags.release_copies import write_copies
from tools.demo_data import load_synthetic

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]


@pytest.fixture(scope="module")
def floor_dag(tmp_path_factory, warehouse):
    """Only the tests' medco copy, under another name and table, with a
    utility threshold no release with dummies can meet (real ratio <= 1)."""
    folder = write_copies(tmp_path_factory.mktemp("releases"))
    raw = yaml.safe_load((folder / "medco_codes.yaml").read_text())
    lda = yaml.safe_load((folder / "lda_trajectories.yaml").read_text())
    for path in folder.glob("*.yaml"):
        path.unlink()
    raw.update(name="medco_floor", thresholds={"max_real_ratio": 1.0},
               destination={"table": "medco_floor"})
    (folder / "medco_floor.yaml").write_text(yaml.safe_dump(raw))
    # every ICD value at 3-digit or finer: k = 3 on these claims must generalize some
    lda.update(name="lda_floor", thresholds={"min_icd_kept_3digit_or_finer": 100},
               destination={"table": "lda_floor"})
    (folder / "lda_floor.yaml").write_text(yaml.safe_dump(lda))
    mp = pytest.MonkeyPatch()
    mp.setenv("DEID_RELEASES_DIR", str(folder))
    mp.setenv("AIRFLOW_VAR_DEID_TOKEN_KEY",
              os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY", "test-key-not-secret"))
    load_synthetic(n_members=300, seed=5, replace=True)
    from airflow.dag_processing.dagbag import DagBag

    try:
        yield DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    finally:
        mp.undo()


def test_a_utility_threshold_fails_the_run_before_load(floor_dag, warehouse):
    run = floor_dag.get_dag("deid_medco_floor").test(run_conf={"scope": "TRUE"})
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


def _table(warehouse, table: str):
    """The release table's rows (None: no such table)."""
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)", (table,))
        if cur.fetchone()[0] is None:
            return None
        cur.execute(f"SELECT * FROM {table} ORDER BY 1")
        return cur.fetchall()


def test_a_minimum_utility_fails_the_run_before_load(floor_dag, warehouse):
    with warehouse.connect() as conn, conn.cursor() as cur:  # an earlier release stands in
        cur.execute("DROP TABLE IF EXISTS release.lda_floor")
        cur.execute("CREATE TABLE release.lda_floor (pseudonym text, icd text, age text)")
        cur.execute("INSERT INTO release.lda_floor VALUES ('p1', '250', '[65-72]')")
        conn.commit()
    before = _table(warehouse, "release.lda_floor")
    run = floor_dag.get_dag("deid_lda_floor").test(run_conf={"k": 3})
    assert str(run.state).endswith("failed")
    assert _table(warehouse, "release.lda_floor") == before == [("p1", "250", "[65-72]")]
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT outcome, error FROM audit.release_runs "
                    "WHERE release_name = 'lda_floor' AND run_id = %s", (run.run_id,))
        (outcome, error), = cur.fetchall()
    assert outcome == "failed" and "icd_kept_3digit_or_finer" in error and ">= 100" in error
    assert not staging.run_dir("lda_floor", run.run_id, create=False).exists()
