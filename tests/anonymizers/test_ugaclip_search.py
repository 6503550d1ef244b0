"""The local search after UGACLIP's post-passes (anonymizers.ugaclip.search): its incremental
feasibility test against bound.feasible, and its releases against the independent verifier."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from anonymizers.errors import InputError
from anonymizers.hierarchy import icd9cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.algorithm import Run
from anonymizers.ugaclip.bound import build_problem, feasible
from anonymizers.ugaclip.loss import SemanticWeights
from anonymizers.ugaclip.policy import UtilityPolicy
from anonymizers.ugaclip.search import GroupModel
from anonymizers.verify.ugaclip import verify_release
from tests.anonymizers.test_ugaclip_properties import CODES, extra, groups, record, to_df, utility

records = st.lists(record, min_size=1, max_size=14)


def run_with(recs, k, assignment, more, moves, seed=0):
    """(df, policy, release JSON and metrics) or None where UGACLIP refuses."""
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    policy += [sorted(c) for c in more]
    config = UGACLIPConfig(k, seed=seed, re_queries=5, search_moves=moves)
    try:
        result = ugaclip(df, policy, utility(assignment), config, hierarchy=icd9cm())
    except InputError as exc:
        assert "would hold nothing" in str(exc)
        return df, policy, None
    return df, policy, result


@settings(deadline=None, max_examples=60)
@given(records, st.integers(1, 6), groups, extra, st.integers(0, 3))
def test_search_release_passes_the_verifier_and_suppresses_no_more(recs, k, assignment, more,
                                                                  seed):
    df, policy, without = run_with(recs, k, assignment, more, 0)
    _, _, result = run_with(recs, k, assignment, more, 25, seed)
    assume(without is not None)
    assert result is not None  # the search never suppresses more, so it cannot refuse
    release = result.to_dict()
    verdict = verify_release(df, release, policy, k)
    assert verdict.ok, verdict.violations
    assert result.metrics["suppressed_codes"] <= without.metrics["suppressed_codes"]
    owner = {c: n for n, grp in enumerate(utility(assignment)) for c in grp}
    for item in release["items"]:  # still a UGACLIP release: items inside one constraint
        assert len({owner.get(c, "uncovered") for c in item}) == 1
    steps = result.metrics["steps"]
    if without.metrics["suppressed_codes"]:
        assert steps["search_moves"] == 25 and steps["search_seed"] == seed


def _model(recs, k, assignment, more):
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    policy += [sorted(c) for c in more]
    rec = encode(df)
    util = UtilityPolicy.from_lists(utility(assignment)) if utility(assignment) else \
        UtilityPolicy((), ())
    run = Run(rec, policy, util, k, SemanticWeights(rec.codes, icd9cm(), 1.0))
    problem = build_problem(rec, policy, [list(u) for u in util.constraints], k)
    return GroupModel(run), problem


@settings(deadline=None, max_examples=80)
@given(records, st.integers(1, 6), groups, extra, st.lists(st.booleans(), min_size=40,
                                                            max_size=40))
def test_incremental_feasibility_matches_bound_feasible(recs, k, assignment, more, flips):
    """Flip codes one by one; after each flip the model's verdict on every
    constraint, and its screen of single returns, agree with ``bound.feasible``
    computed from scratch."""
    model, problem = _model(recs, k, assignment, more)
    n = len(model.S)
    everyone = np.arange(len(model.codes))
    for step, bit in enumerate(flips):
        c = step % n
        if bit:
            model.flip(c, not model.S[c])
        ok = model.failing(everyone).size == 0
        assert ok == feasible(problem, np.flatnonzero(model.S))
        if ok:
            gone = np.flatnonzero(model.S)
            screen = model.restorable(gone)
            for code, can in zip(gone.tolist(), screen.tolist()):
                assert can == feasible(problem, [x for x in gone.tolist() if x != code])


def test_same_seed_same_release_and_the_search_can_only_help():
    recs = [{"401", "250"}, {"401", "4011"}, {"493.00", "250"}, {"493.01", "401"},
            {"493.02", "4011", "250"}, {"401"}, {"250", "4011"}, {"V15.4", "E950"}] * 2
    assignment = [None, 0, 0, None, 1, 1, 2, 2, 2, 3, None, None, None]
    a = run_with(recs, 3, assignment, (), 40, seed=5)[2]
    b = run_with(recs, 3, assignment, (), 40, seed=5)[2]
    base = run_with(recs, 3, assignment, (), 0)[2]
    assert a.items == b.items and a.suppressed == b.suppressed
    assert a.metrics["suppressed_codes"] <= base.metrics["suppressed_codes"]
    assert set(CODES) >= set(a.suppressed)
