"""GCCens released twice while the warehouse's members change (issue 25):
the second run is union-safe (``anonymizers.successive.gccens``, applied by
``deid.methods.gccens``): a persisting patient's record is capped at what
was published of it when the two together would not be k-mapped, the
earlier unions read from the history by keyed link.  The run passes
validate's cross-release check (k-map of every patient's union) against the
first; the Releases view shows both.  300 synthetic members; after the
first run 30 arrive and 30 others leave."""

from __future__ import annotations

import pandas as pd
import pytest
from deid import history

from tests.dags.release_copies import forget_history
from tests.dags.successive_runs import (
    audit,
    checked_cell,
    passed_against,
    release_copies,
    releases_page,
    row,
    two_runs,
)

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

RELEASE = "gccens_repeated_codes"


release_files = release_copies()


@pytest.fixture(scope="module")
def runs(warehouse):
    yield two_runs(warehouse, RELEASE)[:2]
    forget_history(warehouse, RELEASE)


def test_the_second_run_is_union_safe_and_passes_the_cross_release_check(runs, warehouse):
    first, second = runs
    passed_against(warehouse, RELEASE, first, second)
    assert [p.run_id for p in history.published(RELEASE)] == [first.run_id, second.run_id]


def test_utility_with_and_without_the_defence_is_reported(runs, warehouse):
    figures = audit(warehouse, RELEASE, runs[1].run_id)["metrics"]["gccens"]
    for name in ("cul_mean", "cul_mean_without_defence", "instances_released",
                 "instances_released_without_defence", "union_safe_narrowed"):
        assert name in figures, name
    # narrowing only removes copies
    assert figures["instances_released"] <= figures["instances_released_without_defence"]
    assert figures["cul_mean"] >= figures["cul_mean_without_defence"]
    assert (figures["union_safe_narrowed"] > 0) == \
        (figures["instances_released"] < figures["instances_released_without_defence"])


def test_the_releases_view_shows_both_runs(runs):
    first, second = runs
    runs_table, history_table = releases_page(RELEASE)
    assert "no earlier release (the first)" in checked_cell(runs_table, first.run_id)
    assert f"<code>{first.run_id}</code>" in checked_cell(runs_table, second.run_id)
    assert f"<code>{first.run_id}</code>" in row(history_table, second.run_id)


def _table(records: dict) -> pd.DataFrame:
    return pd.DataFrame([(p, c) for p, codes in records.items() for c, n in codes.items()
                         for _ in range(n)], columns=["patient_id", "code"])


def test_the_step_caps_a_record_at_the_published_union(monkeypatch):
    """The DAG step's defence on the library's worked example
    (tests/anonymizers/test_successive_gccens.py): x was published as
    {A, A}; this run's GCCens releases it as {B, B}, and {A, A, B, B} is in
    x's population record alone (k=2).  The step, reading the published
    release by keyed link, drops x's B: the union stays {A, A}, the check
    passes and GCCens's verifier still holds; the plain run is reported beside."""
    from anonymizers.censoring import GCCensConfig, gccens
    from anonymizers.successive import gccens as library
    from anonymizers.successive.check import check
    from anonymizers.verify.censoring import verify_gccens
    from deid import steps
    from deid.methods import gccens as step
    from deid.secret import pseudonym_key

    pop = _table({"x": {"A": 2, "B": 2}, "y": {"A": 2}, "z": {"B": 2},
                  "w": {"A": 1, "B": 1}, "v": {"A": 1, "B": 1}})
    sample = _table({"x": {"A": 2, "B": 2}, "z": {"B": 2}, "w": {"A": 1, "B": 1}})
    config = GCCensConfig(k=2, caps=None, seed=1)
    first = library.release(_table({"x": {"A": 2}, "y": {"A": 2}}), pop, config)
    linked = first.key.assign(original_id=history.link(first.key["original_id"], pseudonym_key()))
    stored = [{"release": first.release, "key": linked}]
    monkeypatch.setattr(history, "earlier_inputs", lambda release, earlier: stored)
    result, key = gccens(sample, pop, config)
    records, cul, metrics = step._union_safe(steps.Run(RELEASE, "test"), result, key, pop, 2,
                                             ["run-1"])
    assert metrics["union_safe_narrowed"] == 1
    assert metrics["instances_released"] == metrics["instances_released_without_defence"] - 2
    assert metrics["cul_mean"] > metrics["cul_mean_without_defence"]
    x, = key.loc[key["original_id"] == "x", "patient_id"]
    assert x not in set(records["patient_id"])  # {B, B} capped at {A, A}: nothing left
    assert cul[list(result.patients).index(x)] == 1.0
    new = {"release": {"records": [
        {"patient_id": p, "codes": dict(zip(g["code"], g["count"]))}
        for p, g in records.groupby("patient_id")]},
        "key": key.assign(original_id=history.link(key["original_id"], pseudonym_key())),
        "population": pop.assign(patient_id=history.link(pop["patient_id"], pseudonym_key()))}
    assert check("gccens", stored, new, {"k": 2}).ok
    plain = {**new, "release": {"records": [
        {"patient_id": p, "codes": dict(zip(g["code"], g["count"]))}
        for p, g in result.records.groupby("patient_id")]}}
    assert not check("gccens", stored, plain, {"k": 2}).ok
    assert verify_gccens(list(result.patients), records, key, sample, pop, 2,
                         result.final_caps).ok
