"""Full runs of a release DAG with dag.test() on the embedded warehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deid import staging
from tools.demo_data import load_synthetic
from deid.methods import METRICS
from deid.secret import key_fingerprint

from tests.dags.release_copies import TEST_POLICY, forget_history, write_copies

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

CONF = {"k": 3, "min_anonymity_set": 5, "n_clusters": None, "seed": 11}
# beside the tests' copies of the release files, a bad file, which must cost
# only its own DAG
BROKEN = "name: broken\nmethod: medco\nparams: {k: 1}\n"


@pytest.fixture(scope="module", autouse=True)
def release_files(tmp_path_factory):
    """The release files are the runs' policies: the tests' copies allow
    k = 3 on 300 synthetic members, and CONF is the medco copy's policy."""
    folder = write_copies(tmp_path_factory.mktemp("releases"))
    (folder / "broken.yaml").write_text(BROKEN)
    before = os.environ.get("DEID_RELEASES_DIR")
    os.environ["DEID_RELEASES_DIR"] = str(folder)
    yield folder
    if before is None:
        del os.environ["DEID_RELEASES_DIR"]
    else:
        os.environ["DEID_RELEASES_DIR"] = before


@pytest.fixture(scope="module", autouse=True)
def token_key():
    """Every release run needs the pseudonym key variable, whichever test runs first."""
    os.environ.setdefault("AIRFLOW_VAR_DEID_TOKEN_KEY", "test-key-not-secret")


@pytest.fixture(scope="module")
def medco_dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors
    assert sorted(bag.dags) == sorted([*(f"deid_{name}" for name in TEST_POLICY),
                                       "deid_maintenance"])  # not broken
    return bag.get_dag("deid_medco_codes")


def _fresh_dag(dag_id: str):
    """A DAG of its own: dag.test() leaves a run's conf in its DAG's params."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(dag_id)


def _measured(method: str, metrics: dict) -> None:
    """Every metric a release file may bound (deid.methods.METRICS) is measured."""
    missing = [m for m in METRICS[method] if not isinstance(metrics.get(m), (int, float))]
    assert not missing, f"{method} declares metrics it does not measure: {missing}"


@pytest.fixture(scope="module")
def source_ids(warehouse):
    from tools.demo_data import TABLES

    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
    forget_history(warehouse)  # new members: no release of them published yet
    load_synthetic(n_members=300, seed=5)
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT DISTINCT desynpuf_id FROM source.beneficiary_summary")
        return {r[0] for r in cur.fetchall()}


def _query(warehouse, sql, *args):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


@pytest.fixture(scope="module")
def medco_run(medco_dag, source_ids):
    return medco_dag.test(run_conf=CONF)


def test_medco_release_end_to_end(medco_run, source_ids, warehouse):
    run = medco_run
    assert str(run.state).endswith("success"), run.state
    rows = _query(warehouse, "SELECT patient_pseudonym, code_token FROM release.medco_codes")
    assert rows
    pseudonyms = {p for p, _ in rows}
    assert not pseudonyms & source_ids
    assert all(len(t) == 16 and int(t, 16) >= 0 for _, t in rows)
    (outcome, seed, out_rows, verdicts, params), = _query(
        warehouse, "SELECT outcome, seed, output_rows, verdicts, params FROM audit.release_runs "
        "WHERE release_name = 'medco_codes' AND run_id = %s", run.run_id)
    assert (outcome, seed, out_rows) == ("loaded", 11, len(rows))
    assert all(v["ok"] for v in verdicts["verdicts"]) and verdicts["gates"]
    assert params["k"] == 3 and "method" not in params
    (metrics, triggered_by, overrides), = _query(
        warehouse, "SELECT metrics, triggered_by, overrides FROM audit.release_runs "
        "WHERE release_name = 'medco_codes' AND run_id = %s", run.run_id)
    _measured("medco", metrics["medco"])
    assert triggered_by == "dag_test" and overrides == {}  # CONF is the file's policy
    dummy_flags = _query(warehouse, "SELECT is_dummy, count(*) FROM restricted.dummy_map "
                         "WHERE run_id = %s GROUP BY is_dummy", run.run_id)
    assert dict(dummy_flags)[False] == len(pseudonyms) - dict(dummy_flags).get(True, 0)
    assert _query(warehouse, "SELECT count(*) FROM restricted.privacy_policies WHERE run_id = %s",
                  run.run_id)[0][0] > 0
    (fingerprint,), = _query(warehouse, "SELECT key_sha256 FROM restricted.token_keys "
                             "WHERE run_id = %s", run.run_id)
    assert fingerprint == key_fingerprint(os.environ["AIRFLOW_VAR_DEID_TOKEN_KEY"])
    (risk_after,), = _query(warehouse, "SELECT risk_after FROM audit.release_runs "
                            "WHERE run_id = %s", run.run_id)
    assert risk_after["guarantees_verified"] and all(risk_after["guarantees_verified"].values())
    assert not staging.run_dir("medco_codes", run.run_id, create=False).exists()
    report, = _query(warehouse, "SELECT report_path FROM audit.release_runs WHERE run_id = %s",
                     run.run_id)[0]
    page = open(report).read()
    assert "every guarantee and check holds" in page and page.count("<img") >= 2
    assert not any(pid in page for pid in source_ids)


def test_failed_run_leaves_previous_release_and_is_audited(medco_dag, medco_run, warehouse):
    before = _query(warehouse, "SELECT count(*), md5(string_agg(patient_pseudonym || code_token,"
                    " ',' ORDER BY patient_pseudonym, code_token)) FROM release.medco_codes")
    run = medco_dag.test(run_conf={**CONF, "scope": "c.clm_from_dt < '1990-01-01'"})
    assert str(run.state).endswith("failed")
    after = _query(warehouse, "SELECT count(*), md5(string_agg(patient_pseudonym || code_token,"
                   " ',' ORDER BY patient_pseudonym, code_token)) FROM release.medco_codes")
    assert after == before and before[0][0] > 0
    outcome = _query(warehouse, "SELECT outcome, error FROM audit.release_runs "
                     "WHERE run_id = %s", run.run_id)
    assert outcome and outcome[0][0] == "failed" and "no claims" in outcome[0][1]
    assert not staging.run_dir("medco_codes", run.run_id, create=False).exists()


def test_gccens_release_keeps_k_map(source_ids, warehouse):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_gccens_repeated_codes")
    run = dag.test(run_conf={"k": 3, "cap": 2})
    assert str(run.state).endswith("success"), run.state
    rows = _query(warehouse, "SELECT patient_pseudonym, code, count "
                  "FROM release.gccens_repeated_codes")
    assert rows and {c for _, c, _ in rows} <= {"250", "272", "401", "724"}
    assert max(n for _, _, n in rows) <= 2
    assert not {p for p, _, _ in rows} & source_ids
    (outcome, verdicts, metrics, overrides), = _query(
        warehouse, "SELECT outcome, verdicts, metrics, overrides FROM audit.release_runs "
        "WHERE run_id = %s AND release_name = 'gccens_repeated_codes'", run.run_id)
    assert outcome == "loaded" and overrides == {"cap": {"file": 3, "run": 2}}  # a lower cap
    _measured("gccens", metrics["gccens"])
    assert any("k-map" in v["property"] and v["ok"] for v in verdicts["verdicts"])


def test_ugaclip_release_holds_every_constraint(source_ids, warehouse):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_ugaclip_diagnoses")
    run = dag.test(run_conf={"k": 3})
    assert str(run.state).endswith("success"), run.state
    held = _query(warehouse, "SELECT patient_pseudonym, item_id FROM release.ugaclip_diagnoses_records")
    items = _query(warehouse, "SELECT item_id, code FROM release.ugaclip_diagnoses_items")
    assert held and items
    assert {i for _, i in held} <= {i for i, _ in items}
    assert not {p for p, _ in held} & source_ids
    (verdicts, metrics), = _query(warehouse, "SELECT verdicts, metrics FROM audit.release_runs "
                                  "WHERE run_id = %s AND release_name = 'ugaclip_diagnoses'",
                                  run.run_id)
    assert all(v["ok"] for v in verdicts["verdicts"]) and len(verdicts["verdicts"]) >= 3
    _measured("ugaclip", metrics["ugaclip"])


def test_disassociation_release_keeps_k_m_anonymity(source_ids, warehouse):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_disassociation_diagnoses")
    run = dag.test(run_conf={"k": 3, "m": 2})
    assert str(run.state).endswith("success"), run.state
    sizes = _query(warehouse, "SELECT size FROM release.disassociation_diagnoses_clusters")
    assert sizes and min(s for (s,) in sizes) >= 3
    chunks = _query(warehouse, "SELECT count(*) FROM release.disassociation_diagnoses_record_chunks")
    assert chunks[0][0] > 0
    (verdicts, metrics), = _query(warehouse, "SELECT verdicts, metrics FROM audit.release_runs "
                                  "WHERE run_id = %s AND release_name = "
                                  "'disassociation_diagnoses'", run.run_id)
    assert all(v["ok"] for v in verdicts["verdicts"])
    _measured("disassociation", metrics["disassociation"])


def test_lda_release_is_k_anonymous(source_ids, warehouse):
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_lda_trajectories")
    run = dag.test(run_conf={"k": 3})
    assert str(run.state).endswith("success"), run.state
    rows = _query(warehouse, "SELECT patient_pseudonym, position, code, age "
                  "FROM release.lda_trajectories ORDER BY 1, 2")
    trajectories: dict = {}
    for p, _, code, age in rows:
        trajectories.setdefault(p, []).append((code, age))
    counts: dict = {}
    for t in trajectories.values():
        counts[tuple(t)] = counts.get(tuple(t), 0) + 1
    assert rows and min(counts.values()) >= 3
    assert not set(trajectories) & source_ids
    (metrics,), = _query(warehouse, "SELECT metrics FROM audit.release_runs WHERE run_id = %s "
                         "AND release_name = 'lda_trajectories'", run.run_id)
    _measured("lda", metrics["lda"])


def test_hhp_release_meets_max_sup_whatever_the_search_tasks(source_ids, warehouse):
    """One search task per lattice part, then all parts in one task: the same
    release (issue #7)."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("deid_hhp_claims")
    released, tasks = [], []
    for per_task in (1, 100):
        forget_history(warehouse, "hhp_claims")  # each a first release: HHP has no
        # cross-release verifier, so a second release of it is refused (issue 25)
        run = dag.test(run_conf={"hhp_iterations": 50, "seed": 7,
                                 "lattice_parts_per_task": per_task})
        assert str(run.state).endswith("success"), run.state
        released.append([_rows(warehouse, t) for t in ("hhp_claims_members",
                                                       "hhp_claims_claims")])
        tasks.append(len([ti for ti in run.get_task_instances() if ti.task_id == "hhp_search"]))
    assert tasks == [5, 1]  # five DSFC levels
    assert released[0] == released[1] and released[0][1]
    members = _query(warehouse, "SELECT DISTINCT member_pseudonym FROM release.hhp_claims_members")
    attrs = {a for (a,) in _query(warehouse, "SELECT DISTINCT attribute FROM "
                                             "release.hhp_claims_claims")}
    assert members and "dsfc" in attrs and not {"service_date", "claim_id"} & attrs
    assert not {m for (m,) in members} & source_ids
    (metrics, policies), = _query(warehouse, "SELECT metrics, policy_versions FROM "
                                  "audit.release_runs WHERE run_id = %s AND release_name = "
                                  "'hhp_claims'", run.run_id)
    assert metrics["hhp"]["risk"] <= 0.05 and policies["hhp_policy"] == "hhp-2012-v1"
    assert metrics["hhp"]["lattice_parts"] == 5
    _measured("hhp", metrics["hhp"])


def _rows(warehouse, table):
    return sorted(_query(warehouse, f"SELECT * FROM release.{table}"))


def test_release_does_not_depend_on_batching(medco_dag, source_ids, warehouse):
    """Issue #7: one batch or several, the same release for the same seed."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_disassociation_diagnoses")
    tables = [f"disassociation_diagnoses_{b}" for b in
              ("clusters", "record_chunks", "item_chunks", "shared_chunks",
               "shared_chunk_clusters")]
    released, batches = [], []
    for size in (100_000, 4):
        run = dag.test(run_conf={"k": 3, "m": 2, "seed": 5, "refine_window": 4,
                                 "batch_size": size})
        assert str(run.state).endswith("success"), run.state
        released.append([_rows(warehouse, t) for t in tables])
        batches.append(len([ti for ti in run.get_task_instances()
                            if ti.task_id == "disassociation_disassociate"]))
    assert batches[0] == 1 and batches[1] >= 3
    assert released[0] == released[1] and released[0][1]


def test_disassociation_of_fewer_than_k_patients_releases_nothing(medco_dag, source_ids,
                                                                  warehouse):
    """Fewer than k patients: no release keeps k^m-anonymity, so the plan step
    refuses them (TooFewRecords, an InputError): the run fails at plan, loads
    no cluster and leaves the previous release as it was."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag(
        "deid_disassociation_diagnoses")
    two = sorted(source_ids)[:2]
    before = _rows(warehouse, "disassociation_diagnoses_clusters")
    run = dag.test(run_conf={"k": 3, "m": 2, "scope": f"c.desynpuf_id IN ('{two[0]}', "
                                                      f"'{two[1]}')"})
    assert str(run.state).endswith("failed"), run.state
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states["disassociation_plan"].endswith("failed"), states
    assert not any(str(states.get(t)).endswith("success") for t in
                   ("disassociation_disassociate", "disassociation_combine")), states
    assert _rows(warehouse, "disassociation_diagnoses_clusters") == before
    (outcome, error), = _query(warehouse, "SELECT outcome, error FROM audit.release_runs "
                               "WHERE run_id = %s AND release_name = "
                               "'disassociation_diagnoses'", run.run_id)
    assert outcome == "failed" and "disassociation_plan" in error
    assert "2 record(s), fewer than k = 3" in error


def test_screening_does_not_depend_on_member_ranges(medco_dag, medco_run, warehouse):
    before = _rows(warehouse, "medco_codes")
    # a first release again: the same dummies as medco_run's (a second
    # release would continue its dummy state, generation 2, issue 25)
    forget_history(warehouse, "medco_codes")
    # dag.test keeps an earlier run's conf in the DAG's params: set the scope again
    run = medco_dag.test(run_conf={**CONF, "scope": "TRUE", "screen_batch_members": 40})
    assert str(run.state).endswith("success"), run.state
    ranges = [ti for ti in run.get_task_instances() if ti.task_id == "screen"]
    assert len(ranges) >= 4
    assert _rows(warehouse, "medco_codes") == before
    (metrics,), = _query(warehouse, "SELECT metrics FROM audit.release_runs WHERE run_id = %s "
                         "AND release_name = 'medco_codes'", run.run_id)
    assert metrics["screen"]["batches"] == len(ranges)


def test_screening_runs_before_a_code_release(medco_run, warehouse):
    (metrics, policies), = _query(warehouse, "SELECT metrics, policy_versions FROM "
                                  "audit.release_runs WHERE run_id = %s AND release_name = "
                                  "'medco_codes'", medco_run.run_id)
    assert policies["screening"] == "hhp-2012-v1"
    assert metrics["screen"]["members_removed"] > 0


def _audit(warehouse, release: str, run_id: str) -> dict:
    rows = _query(warehouse, "SELECT outcome, error, params, triggered_by, scope, overrides, "
                  "input_rows FROM audit.release_runs WHERE release_name = %s AND run_id = %s",
                  release, run_id)
    assert len(rows) == 1, rows
    return dict(zip(("outcome", "error", "params", "triggered_by", "scope", "overrides",
                     "input_rows"), rows[0]))


def _refused_before_extract(run) -> None:
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert str(run.state).endswith("failed")
    assert states["prepare"].endswith("failed") and states["extract"].endswith("upstream_failed")
    assert not staging.run_dir(run.dag_id.removeprefix("deid_"), run.run_id,
                               create=False).exists()


def test_a_trigger_lowering_k_is_refused_and_audited(source_ids, warehouse):
    """Issue 26: {"k": 2} against a file that says more loaded a k=2 release."""
    run = _fresh_dag("deid_gccens_repeated_codes").test(run_conf={"k": 2})
    _refused_before_extract(run)
    audit = _audit(warehouse, "gccens_repeated_codes", run.run_id)
    assert audit["outcome"] == "failed" and audit["input_rows"] is None
    assert "gccens_repeated_codes.yaml does not allow this run: k: 2 is weaker than the " \
           "release file's 3" in audit["error"]
    assert audit["triggered_by"] == "dag_test"
    assert audit["overrides"]["k"]["run"] == 2 and "refused" in audit["overrides"]["k"]


def test_a_method_override_is_refused(source_ids, warehouse):
    dag = _fresh_dag("deid_medco_codes")
    assert not [t for t in dag.task_ids if t.split("_")[0] in ("ugaclip", "disassociation")]
    run = dag.test(run_conf={**CONF, "method": "ugaclip"})
    _refused_before_extract(run)
    audit = _audit(warehouse, "medco_codes", run.run_id)
    assert audit["outcome"] == "failed"
    assert "method: the release file fixes 'medco'; a trigger may not choose 'ugaclip'" \
        in audit["error"]


def test_a_stronger_override_runs_and_is_recorded_with_the_user(source_ids, warehouse):
    scope = "c.clm_from_dt IS NOT NULL"
    # a first release: beside the k=3 release of the same members, this k=4
    # one fails the cross-release check (issue 25), which is not this test's
    forget_history(warehouse, "ugaclip_diagnoses")
    run = _fresh_dag("deid_ugaclip_diagnoses").test(run_conf={"k": 4, "scope": scope})
    assert str(run.state).endswith("success"), run.state
    (report,), = _query(warehouse, "SELECT report_path FROM audit.release_runs WHERE "
                        "release_name = 'ugaclip_diagnoses' AND run_id = %s", run.run_id)
    audit = _audit(warehouse, "ugaclip_diagnoses", run.run_id)
    assert audit["outcome"] == "loaded" and audit["params"]["k"] == 4
    assert audit["triggered_by"] == "dag_test"  # the user Airflow records for dag.test runs
    assert audit["scope"] == f"(TRUE) AND ({scope})"
    assert audit["overrides"] == {"k": {"file": 3, "run": 4},
                                  "scope": {"file": "TRUE", "run": scope}}
    page = Path(report).read_text()
    assert "dag_test" in page and scope in page  # the run record reaches the report


def test_a_task_of_a_run_finds_its_dag_beside_a_bad_file(release_files):
    """A task's process parses the DAG file again, for its own DAG only,
    reading only its own release file: a bad file beside it does not matter."""
    from tests.dags.test_dagbag import _parse_in_a_fresh_process

    assert (release_files / "broken.yaml").exists()
    task = _parse_in_a_fresh_process("deid_medco_codes", "validate")
    assert task["dags"] == ["deid_medco_codes"]
    everything = _parse_in_a_fresh_process(None)
    assert everything["dags"] == sorted(f"deid_{name}" for name in TEST_POLICY)
