"""The same release run on a schedule while the warehouse's members change
(issue 25): each run is checked against the releases published before it,
a combination that breaks the guarantee fails the run before load, and the
Releases view shows each run with what it was checked against.

MedCo (``deid_medco_codes``), whose defence is state: 300 synthetic members of whom 30 arrive only
after the first run and 30 others leave after it (the issue's weekly run, 10%
turnover).  The second run continues the first's dummy state (stored with
its load) and passes.  A third run whose state was lost (the owner deleted
it: a restore without it) draws its dummies anew beside releases whose
dummies persisted, which is what the issue's attack exploits: validate
fails it, the audit row names the two releases it was checked against and
the published release stays the second run's.

GCCens (``deid_gccens_repeated_codes``), checked by the library's
cross-release verifier (``anonymizers.successive.check``): after the first
run, members leave so that a persisting patient's released count of a code
is held by fewer than k patients of the new population.  Whatever the second
run censors, the patient's union over both releases is then k-mapped to
fewer than k records: validate fails the run, naming the first release.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from deid import history, staging, steps

from tests.dags.release_copies import TEST_POLICY, forget_history
from tests.dags.successive_runs import TURNOVER, Members, release_copies
from tests.dags.successive_runs import audit as _audit
from tests.dags.successive_runs import dag as _dag
from tests.dags.successive_runs import query as _query
from tests.dags.successive_runs import released as _released
from tests.dags.successive_runs import row as _row

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

MEDCO, GCCENS = "medco_codes", "gccens_repeated_codes"
# the repository file's smallest frequency cluster (20), not the tests' usual
# copy's 5: with 5 on these 300 members the second generation's top-up finds
# no plan (DummyGenerationError of anonymizers.dummies.persist)
POLICY = {**TEST_POLICY, MEDCO: {**TEST_POLICY[MEDCO], "min_anonymity_set": 20}}
CONF = {**POLICY[MEDCO], "n_clusters": None}


release_files = release_copies(POLICY)


@pytest.fixture(scope="module")
def members(warehouse):
    yield Members(warehouse, (MEDCO, GCCENS))
    for release in (MEDCO, GCCENS):  # later tests start from first releases
        forget_history(warehouse, release)


@pytest.fixture(scope="module")
def medco_runs(warehouse, members):
    """Run 1; 10% turnover; run 2; its state lost; run 3."""
    first_members = members.present()
    dag = _dag(f"deid_{MEDCO}")
    first = dag.test(run_conf=CONF)
    members.turn_over()
    assert len(members.present() & first_members) == 300 - TURNOVER
    second = dag.test(run_conf=CONF)
    published = _released(warehouse, MEDCO)
    _query(warehouse, "DELETE FROM restricted.release_parts WHERE release_name = %s "
           "AND run_id = %s AND starts_with(part, %s)", MEDCO, second.run_id, history.STATE)
    third = dag.test(run_conf=CONF)
    return first, second, third, published


def test_the_first_run_is_checked_against_nothing_and_keeps_its_state(medco_runs, warehouse):
    first = medco_runs[0]
    assert str(first.state).endswith("success"), first.state
    assert _audit(warehouse, MEDCO, first.run_id)["checked_against"] == []
    published = {p.run_id: p for p in history.published(MEDCO)}
    assert published[first.run_id].checked_against == []
    state = history.read_parts(MEDCO, first.run_id, history.STATE)
    assert {"state/medco_state", "state/medco_state_dummies"} <= set(state)
    dummies = state["state/medco_state_dummies"]
    assert len(dummies) > 0
    assert not set(dummies["source_patient_id"]) & Members.present_in(warehouse)  # links


def test_the_second_run_continues_the_first_and_is_checked_against_it(medco_runs, warehouse):
    first, second, _, _ = medco_runs
    assert str(second.state).endswith("success"), second.state
    audit = _audit(warehouse, MEDCO, second.run_id)
    assert audit["checked_against"] == [first.run_id]
    persisted, = [v for v in audit["verdicts"]["verdicts"] if "persist" in v["property"]]
    assert persisted["ok"] and first.run_id in persisted["property"]
    attacked, = [v for v in audit["verdicts"]["verdicts"]
                 if v["property"].startswith("MedCo across 2 releases")]
    assert attacked["ok"] and attacked["checked"] > 0
    figures = audit["metrics"]["medco"]
    assert figures["generation"] == 2 and figures["carried_dummies"] > 0
    published = {p.run_id: p for p in history.published(MEDCO)}
    assert published[second.run_id].checked_against == [first.run_id]


def test_a_run_that_lost_the_state_fails_before_load(medco_runs, warehouse):
    first, second, third, published = medco_runs
    assert str(third.state).endswith("failed"), third.state
    states = {ti.task_id: str(ti.state) for ti in third.get_task_instances()}
    assert states["validate"].endswith("failed") and not states["load"].endswith("success")
    audit = _audit(warehouse, MEDCO, third.run_id)
    assert audit["outcome"] == "failed"
    assert audit["checked_against"] == [first.run_id, second.run_id]
    assert "MedCo dummies persist across releases" in audit["error"]
    # and the library's comparison attacks, scored, tell real from dummy
    assert "MedCo across 3 releases: no comparison attack tells real from dummy" \
        in audit["error"]
    assert _released(warehouse, MEDCO) == published  # the second run's release, untouched
    assert [p.run_id for p in history.published(MEDCO)] == [first.run_id, second.run_id]
    assert not staging.run_dir(MEDCO, third.run_id, create=False).exists()


def test_the_releases_view_shows_each_run_and_what_it_was_checked_against(medco_runs):
    from deid.releases import load_all_with_errors
    from deid.releases_view import _release_section

    first, second, third, _ = medco_runs
    rel, = [r for r in load_all_with_errors()[0] if r.name == MEDCO]
    page = _release_section(rel)
    runs = page[:page.index("<h3>Release history</h3>")]
    published = page[page.index("<h3>Release history</h3>"):]
    for run, checked in ((first, []), (second, [first]), (third, [first, second])):
        row = _row(runs, run.run_id)
        cell = row[row.index("class='checked'"):]
        cell = cell[:cell.index("</td>")]
        if checked:
            assert all(f"<code>{c.run_id}</code>" in cell for c in checked), cell
        else:
            assert "no earlier release (the first)" in cell
    assert "failed" in _row(runs, third.run_id)
    assert third.run_id not in published  # never published
    assert f"<code>{first.run_id}</code>" in _row(published, second.run_id)


def _population(release_name: str) -> pd.DataFrame:
    """The GCCens population of the warehouse as a run extracts it (a scratch
    run of the pipeline's own extract and population steps)."""
    from deid.methods import gccens
    from deid.releases import load_all_with_errors

    rel, = [r for r in load_all_with_errors()[0] if r.name == release_name]
    scratch = steps.Run(release_name, "test_successive_population")
    try:
        steps.extract(scratch, "TRUE")
        return gccens._population(scratch, rel.params)
    finally:
        steps.cleanup(scratch)


def _rarest_released(run_id: str, population: pd.DataFrame) -> tuple[str, list[str]]:
    """A persisting patient's released (code, count) held by the fewest
    population patients (at least k, by k-map), as (its patient's link, the
    other holders' links)."""
    from deid.secret import pseudonym_key

    parts = history.read_parts(GCCENS, run_id, history.CHECK)
    records = json.loads(parts["check/release.json"]["json"].iloc[0])["records"]
    owner = dict(zip(parts["check/key"]["patient_id"], parts["check/key"]["original_id"]))
    counts = (population.assign(link=history.link(population["patient_id"], pseudonym_key()))
              .groupby(["link", "code"]).size())
    best = None
    for record in records:
        for code, n in record["codes"].items():
            holders = counts[counts >= n].xs(code, level="code").index.tolist()
            if best is None or len(holders) < len(best[1]):
                best = (owner[record["patient_id"]], holders)
    return best[0], [h for h in best[1] if h != best[0]]


@pytest.fixture(scope="module")
def gccens_runs(warehouse, members):
    """Run 1; the other holders of a released count leave but one; run 2."""
    from deid.secret import pseudonym_key

    k = POLICY[GCCENS]["k"]
    dag = _dag(f"deid_{GCCENS}")
    first = dag.test(run_conf={"k": k})
    population = _population(GCCENS)
    target, others = _rarest_released(first.run_id, population)
    assert len(others) >= k - 1  # the release was k-mapped
    ids = pd.Series(population["patient_id"].unique())
    by_link = dict(zip(history.link(ids, pseudonym_key()), ids))
    leavers = [by_link[h] for h in others[k - 2:]]  # k - 2 others stay: k - 1 holders
    Members.remove_from(warehouse, leavers)
    published = _released(warehouse, GCCENS)
    second = dag.test(run_conf={"k": k})
    return first, second, published, by_link[target]


def test_a_combination_below_k_map_fails_before_load(gccens_runs, warehouse):
    first, second, published, target = gccens_runs
    assert str(first.state).endswith("success"), first.state
    assert target in Members.present_in(warehouse)  # the patient persists
    assert str(second.state).endswith("failed"), second.state
    states = {ti.task_id: str(ti.state) for ti in second.get_task_instances()}
    assert states["validate"].endswith("failed") and not states["load"].endswith("success")
    audit = _audit(warehouse, GCCENS, second.run_id)
    assert audit["outcome"] == "failed" and audit["checked_against"] == [first.run_id]
    assert "k-map of the union of each patient's GCCens records over 2 releases" \
        in audit["error"]
    assert _released(warehouse, GCCENS) == published
    assert [p.run_id for p in history.published(GCCENS)] == [first.run_id]


@pytest.mark.parametrize("release", ["ugaclip_diagnoses", "lda_trajectories", GCCENS,
                                     "disassociation_diagnoses"])
def test_the_same_members_released_again_pass_the_check(release, members, warehouse):
    """No false alarm: the same release of unchanged members, run twice, is
    checked against the first run by the library's verifier and loads."""
    forget_history(warehouse, release)
    dag = _dag(f"deid_{release}")
    conf = {"k": POLICY[release]["k"]}
    try:
        first, second = dag.test(run_conf=conf), dag.test(run_conf=conf)
    finally:
        forget_history(warehouse, release)
    assert str(first.state).endswith("success") and str(second.state).endswith("success"), \
        _audit(warehouse, release, second.run_id)["error"]
    audit = _audit(warehouse, release, second.run_id)
    assert audit["checked_against"] == [first.run_id]
    crossed = [v for v in audit["verdicts"]["verdicts"] if "over 2 releases" in v["property"]]
    assert len(crossed) == 1 and crossed[0]["ok"] and crossed[0]["checked"] > 0


def test_a_second_hhp_release_is_refused_in_one_line():
    """HHP has no cross-release property (docs/threat-model-successive.md,
    3.6): its second release stops validate with one line that says why and
    what the operator can do."""
    from deid import cross_release

    earlier = [history.Published("hhp_claims", "run-1", "hhp", "TRUE", {}, None, "f", [])]
    with pytest.raises(steps.ValidationFailed) as refused:
        cross_release.verdicts(steps.Run("hhp_claims", "run-2"), "hhp", {"k": 3}, earlier)
    line = str(refused.value)
    assert "\n" not in line
    assert "hhp_claims already published ['run-1']" in line
    assert "no cross-release guarantee" in line and "3.6" in line
    assert "keep the published release" in line and "retire it from the history" in line
    assert cross_release.verdicts(steps.Run("hhp_claims", "run-1"), "hhp", {"k": 3}, []) == []


def test_the_second_run_of_an_hhp_release_stops_with_that_line(members, warehouse):
    """The same refusal through the DAG: the audit row's error is the one
    line, and it names the release it was checked against."""
    forget_history(warehouse, "hhp_claims")
    try:
        first = _dag("deid_hhp_claims").test()
        second = _dag("deid_hhp_claims").test()
    finally:
        forget_history(warehouse, "hhp_claims")
    assert str(first.state).endswith("success"), _audit(warehouse, "hhp_claims",
                                                        first.run_id)["error"]
    assert str(second.state).endswith("failed")
    audit = _audit(warehouse, "hhp_claims", second.run_id)
    assert audit["checked_against"] == [first.run_id]
    assert audit["error"].startswith(f"validate: HHP release hhp_claims already published "
                                     f"['{first.run_id}'] and HHP has no cross-release")
    assert "\n" not in audit["error"]
