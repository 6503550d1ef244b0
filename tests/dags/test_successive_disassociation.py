"""A scheduled disassociation release over members that changed (issue 25):
the DAG applies stable clusters with retention, so its second run is
published, checked against the first by the library's cross-release
verifier; the same run without the defence is refused by that check.

``deid_disassociation_diagnoses`` on 300 synthetic members, k=3, m=2: 30
arrive only after the first run and 30 others leave after it (10% turnover,
the issue's weekly run).  In order:

1. run 1, a first release: a plain disassociation of the claims (the
   release the library makes of them), its state stored by keyed link;
2. the members turn over;
3. run 2 with the defence forced off (the plan step finds no stored state,
   as a plain run would): independent clusters, and the departed patients
   are told apart (the departure attack): validate fails it, naming run 1;
4. run 2 again, with the defence: persisting and departed patients keep
   their clusters, the arrivals form clusters of their own; validate checks
   it against run 1 and passes, and it loads; its utility is reported
   beside the plain release's.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
from deid import history, steps
from deid import parquet_io as pio
from deid.methods import disassociation as dis

from tests.dags.release_copies import TEST_POLICY, forget_history, write_copies
from tests.dags.successive_runs import TURNOVER, Members
from tests.dags.successive_runs import audit as _audit
from tests.dags.successive_runs import dag as _dag
from tests.dags.successive_runs import query as _query
from tests.dags.successive_runs import released as _released
from tests.dags.successive_runs import row as _row

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

RELEASE = "disassociation_diagnoses"
CONF = {"k": TEST_POLICY[RELEASE]["k"]}
CROSS = "k-anonymity of disassociation composed over 2 releases"


@pytest.fixture(scope="module", autouse=True)
def release_files(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DEID_RELEASES_DIR", str(write_copies(tmp_path_factory.mktemp("releases"))))
    mp.setenv("AIRFLOW_VAR_DEID_TOKEN_KEY", os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY")
              or "test-key-not-secret")
    yield
    mp.undo()


def _plain_fingerprint(release_name: str) -> str:
    """The fingerprint of the library's plain disassociation of the claims a
    run extracts now (a scratch run of the pipeline's extract), with the
    release's parameters, staged as the DAG stages its tables."""
    from anonymizers.disassociation.batches import Stitcher, plan, run_batch
    from deid.releases import load_all_with_errors

    rel, = [r for r in load_all_with_errors()[0] if r.name == release_name]
    scratch = steps.Run(release_name, "test_successive_disassociation_plain")
    try:
        steps.extract(scratch, "TRUE")
        claims = scratch.path("claims.parquet")
        config = dis._config(rel.params, dis._policy(rel.params, claims))
        records = pd.read_parquet(claims, columns=["patient_id", "code"]).drop_duplicates()
        p = plan(records, config)
        tables = Stitcher(p).add(run_batch(records, p.rows, config, p.n_clusters))
        paths = {b: scratch.path(f"plain_{b}.parquet") for b in dis.BLOCKS}
        with pio.ParquetAppender(paths, dis.TABLE_TYPES) as out:
            out.append({b: tables[b] for b in dis.BLOCKS})
        return history.fingerprint({f"dis_{b}": pio.ParquetFrame(paths[b]) for b in dis.BLOCKS})
    finally:
        steps.cleanup(scratch)


def _links(ids) -> set:
    from deid.secret import pseudonym_key

    return set(history.link(pd.Series(sorted(ids), dtype=str), pseudonym_key()))


def _links_with_claims(run_id: str) -> set:
    """The links of the patients whose records run ``run_id`` checked (its truth)."""
    return set(history.read_parts(RELEASE, run_id, history.CHECK)["check/truth"]["patient_id"])


@pytest.fixture(scope="module")
def runs(warehouse):
    """Run 1; turnover; run 2 without the defence; run 2 with it."""
    members = Members(warehouse, [RELEASE])
    first_members = members.present()
    dag = _dag(f"deid_{RELEASE}")
    first = dag.test(run_conf=CONF)
    plain = _plain_fingerprint(RELEASE)
    members.turn_over()
    assert len(members.present() & first_members) == 300 - TURNOVER
    published = _released(warehouse, f"{RELEASE}_clusters")
    real = history.last_state
    mp = pytest.MonkeyPatch()
    # the defence forced off: the plan step sees the history without its state
    mp.setattr(history, "last_state", lambda release, before: (real(release, before)[0], {}))
    try:
        off = dag.test(run_conf=CONF)
    finally:
        mp.undo()
    after_off = _released(warehouse, f"{RELEASE}_clusters")
    on = dag.test(run_conf=CONF)
    yield {"first": first, "off": off, "on": on, "plain": plain, "published": published,
           "after_off": after_off,
           "first_members": first_members, "members": members}
    forget_history(warehouse, RELEASE)  # later tests start from first releases


def test_the_first_run_is_plain_disassociation_and_stores_its_state(runs, warehouse):
    first = runs["first"]
    assert str(first.state).endswith("success"), first.state
    assert _audit(warehouse, RELEASE, first.run_id)["checked_against"] == []
    entry, = [p for p in history.published(RELEASE) if p.run_id == first.run_id]
    assert entry.fingerprint == runs["plain"]  # the release a plain run made before
    state = history.read_parts(RELEASE, first.run_id, history.STATE)
    assert set(state) == {"state/dis_membership", "state/dis_records"}
    membership = state["state/dis_membership"]
    metrics = _audit(warehouse, RELEASE, first.run_id)["metrics"]["disassociation"]
    assert len(membership) == metrics["n_records"] and membership["patient_id"].is_unique
    assert set(membership["patient_id"]) <= _links(runs["first_members"])  # links, not ids
    assert metrics["stable_clusters"] is False and metrics["state_from"] is None


def test_without_the_defence_validate_fails_the_second_run(runs, warehouse):
    first, off = runs["first"], runs["off"]
    assert str(off.state).endswith("failed"), off.state
    states = {ti.task_id: str(ti.state) for ti in off.get_task_instances()}
    assert states["validate"].endswith("failed") and not states["load"].endswith("success")
    audit = _audit(warehouse, RELEASE, off.run_id)
    assert audit["outcome"] == "failed" and audit["checked_against"] == [first.run_id]
    assert f"failed verdicts: ['{CROSS}" in audit["error"]  # the only failed verdict
    assert runs["after_off"] == runs["published"]  # the first run's release, untouched


def test_with_the_defence_the_second_run_passes_the_check_against_the_first(runs, warehouse):
    first, off, on = runs["first"], runs["off"], runs["on"]
    assert str(on.state).endswith("success"), _audit(warehouse, RELEASE, on.run_id)["error"]
    audit = _audit(warehouse, RELEASE, on.run_id)
    assert audit["checked_against"] == [first.run_id]
    crossed, = [v for v in audit["verdicts"]["verdicts"] if v["property"].startswith(CROSS)]
    assert crossed["ok"] and crossed["checked"] > 0
    assert all(v["ok"] for v in audit["verdicts"]["verdicts"])
    assert [p.run_id for p in history.published(RELEASE)] == [first.run_id, on.run_id]
    assert _released(warehouse, f"{RELEASE}_clusters") != runs["published"]
    m = audit["metrics"]["disassociation"]
    assert m["stable_clusters"] is True and m["state_from"] == first.run_id
    before = set(history.read_parts(RELEASE, first.run_id, history.STATE)
                 ["state/dis_membership"]["patient_id"])
    now = _links(runs["members"].present()) & _links_with_claims(on.run_id)
    assert (m["persisting"], m["arrived"], m["retained_left"], m["held_back"]) == \
        (len(before & now), len(now - before), len(before - now), 0)
    assert m["retained_left"] > 0.8 * TURNOVER and m["arrived"] > 0.8 * TURNOVER
    assert m["n_records"] == len(before | now) and m["cluster_size_min"] >= CONF["k"]
    # the utility of the release beside the plain release of the same claims
    for name in ("are_w1", "are_w2", "mre_share_in_-5_5", "mre_share_in_-5_5_single_codes"):
        assert 0 <= m[name] and 0 <= m[f"plain_{name}"], name
    assert m["mre_share_in_-5_5_single_codes"] > 0.5  # the defended release is of use


def test_every_patient_keeps_its_cluster(runs):
    """Stable clusters: the first release's clusters hold the same patients
    (links) in the second, departed ones included; the arrivals' clusters follow."""
    first, on = runs["first"], runs["on"]
    before = history.read_parts(RELEASE, first.run_id, history.STATE)["state/dis_membership"]
    after = history.read_parts(RELEASE, on.run_id, history.STATE)["state/dis_membership"]
    kept = after.merge(before, on="patient_id", suffixes=("", "_before"))
    assert len(kept) == len(before) and (kept["cluster"] == kept["cluster_before"]).all()
    new = after[~after["patient_id"].isin(before["patient_id"])]
    assert len(new) > 0 and (new["cluster"] > before["cluster"].max()).all()
    assert set(new["patient_id"]) <= _links(runs["members"].present())  # arrivals


def test_the_releases_view_lists_both_runs_and_what_the_second_was_checked_against(runs):
    from deid.releases import load_all_with_errors
    from deid.releases_view import _release_section

    first, off, on = runs["first"], runs["off"], runs["on"]
    rel, = [r for r in load_all_with_errors()[0] if r.name == RELEASE]
    page = _release_section(rel)
    runs_table = page[:page.index("<h3>Release history</h3>")]
    published = page[page.index("<h3>Release history</h3>"):]
    for run in (off, on):
        row = _row(runs_table, run.run_id)
        assert f"<code>{first.run_id}</code>" in row[row.index("class='checked'"):]
    assert "failed" in _row(runs_table, off.run_id)
    assert off.run_id not in published
    assert first.run_id in published
    assert f"<code>{first.run_id}</code>" in _row(published, on.run_id)


# --- the method's steps on staged claims, without Airflow ------------------------------

def _staged(run_id: str, ids: list[str], seed: int):
    import shutil

    import numpy as np

    run = steps.Run("dis_successive_steps_test", run_id)
    shutil.rmtree(run.dir)
    run.dir  # noqa: B018 - creates it again
    rng = np.random.default_rng(seed)
    rows = [(p, f"c{p}{j}", f"{c:03d}") for p in ids
            for j, c in enumerate(rng.choice(30, size=rng.integers(1, 5), replace=False))]
    pd.DataFrame(rows, columns=["patient_id", "claim_id", "code"]).to_parquet(
        run.path("claims.parquet"), index=False)
    return run


def _steps(run, params) -> list[dict]:
    from tests.integration.test_disassociation_plan_step import _release

    _release(run, params)  # plan, disassociate, combine, verify_batch
    dis.measure(run, params)
    return dis.verify(run, params)


def test_fewer_than_k_arrivals_are_held_back_and_the_steps_verify_the_release(monkeypatch):
    """The steps on a state: 3 patients left, 2 (< k) arrived.  The arrivals
    are held back (not in the release, not in the new state), the leavers
    are retained under their links, every verifier passes, and the
    cross-release check of the two runs' inputs passes."""
    from anonymizers.successive.check import check
    from deid import cross_release
    from deid.methods import param_schemas
    from deid.secret import pseudonym_key

    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy="icd9-level-1")
    ids = [f"m{i:03d}" for i in range(62)]
    monkeypatch.setattr(history, "last_state", lambda release, before: (None, {}))
    first = _staged("r1", ids[:60], seed=1)
    assert all(v["ok"] for v in _steps(first, params))
    state = dis.state_parts(first)
    monkeypatch.setattr(history, "last_state", lambda release, before: ("r1", state))
    second = _staged("r2", ids[3:], seed=2)
    verdicts = _steps(second, params)
    assert all(v["ok"] for v in verdicts), verdicts
    assert [v["checked"] for v in verdicts if v["property"] == dis.HELD_PROPERTY] == [2]
    m = second.read_json("method_metrics.json")
    assert (m["held_back"], m["retained_left"], m["arrived"], m["persisting"]) == (2, 3, 2, 57)
    assert m["n_records"] == 60 and m["stable_clusters"] is True and m["state_from"] == "r1"
    assert {f"plain_{n}" for n in ("are_w1", "are_w2", "mre_share_in_-5_5",
                                   "mre_share_in_-5_5_single_codes")} <= set(m)
    links = _links(ids[:60])
    after = dis.state_parts(second)["dis_membership"]
    assert set(after["patient_id"]) == links  # leavers kept, arrivals held back
    assert set(dis.state_parts(second)["dis_records"]["patient_id"]) == links
    key = pseudonym_key()
    inputs = [cross_release.of_run(r, "disassociation", params) for r in (first, second)]
    assert set(inputs[1]["membership"]["patient_id"]) == \
        set(history.link(pd.Series(ids[:60]), key))  # as the first run's links them
    assert check("disassociation", inputs[:1], inputs[1], {"k": 3, "m": 2}).ok


def test_claims_of_fewer_than_k_patients_are_refused_under_a_state(monkeypatch):
    """As in a first run (TooFewRecords), though retained records could fill
    the clusters: the release would be the earlier one again."""
    from anonymizers.disassociation import TooFewRecords
    from deid.methods import param_schemas

    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, utility_policy="none")
    ids = [f"m{i:03d}" for i in range(20)]
    monkeypatch.setattr(history, "last_state", lambda release, before: (None, {}))
    first = _staged("r3", ids, seed=3)
    _steps(first, params)
    state = dis.state_parts(first)
    monkeypatch.setattr(history, "last_state", lambda release, before: ("r3", state))
    with pytest.raises(TooFewRecords, match="2 record.*fewer than k = 3"):
        dis.plan(_staged("r4", ids[:2], seed=4), params)
