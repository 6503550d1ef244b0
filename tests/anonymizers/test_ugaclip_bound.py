"""Lower bounds on suppression (``anonymizers.ugaclip.bound``), the baselines
(ACLIP, suppression-only) against the verifier, ICD-9 code forms and IL that
is never a false zero."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.hierarchy import icd9cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.baselines import aclip, suppression_only
from anonymizers.ugaclip.bound import (_distinct_rows, _maximal_frequent, _pair_value,
                                       _record_groups, brute_force_min_suppression,
                                       build_problem, exact_min_suppression, feasible,
                                       holder_pair_bound, hull_lagrangian_bound,
                                       relaxed_min_suppression)
from anonymizers.ugaclip.codes import dotted, place
from anonymizers.ugaclip.plan import repair, suppression_plan
from anonymizers.verify.ugaclip import verify_release

CODES = ["a1", "a2", "a3", "b1", "b2", "c1", "c2", "d1"]
GROUPS = [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2"], ["d1"]]
record = st.frozensets(st.sampled_from(CODES), min_size=1, max_size=4)


def to_df(recs) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, rec in enumerate(recs) for c in sorted(rec)]
    return pd.DataFrame(rows, columns=["patient_id", "code"], dtype=str)


def problem_of(recs, k):
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    return df, policy, build_problem(encode(df), policy, GROUPS, k)


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=3, max_size=9), st.integers(2, 3))
def test_bounds_order_relaxed_exact_and_ugaclip(recs, k):
    """relaxed <= with shrink cuts == exact MILP == enumeration <= UGACLIP."""
    df, policy, problem = problem_of(recs, k)
    relaxed = relaxed_min_suppression(problem, time_limit=30)
    shrink = relaxed_min_suppression(problem, time_limit=30, shrink=True)
    exact = exact_min_suppression(problem, time_limit=30)
    truth = brute_force_min_suppression(problem)
    assert relaxed["optimal"] and shrink["optimal"] and exact["optimal"]
    assert relaxed["bound"] <= shrink["bound"] == truth == exact["bound"]
    assert feasible(problem, shrink["suppressed"])
    assert shrink["relaxed"]["bound"] == relaxed["bound"]  # its (R) phase is (R)
    for rounds in (1, 2, 3):  # stopped early, every figure is still a lower bound
        partial = relaxed_min_suppression(problem, max_rounds=rounds, shrink=True)
        assert relaxed_min_suppression(problem, max_rounds=rounds)["bound"] \
            <= partial["bound"] <= truth
    try:
        result = ugaclip(df, policy, GROUPS, UGACLIPConfig(k, re_queries=0), hierarchy=icd9cm())
    except Exception as exc:  # refused: it would suppress every code
        assert "would hold nothing" in str(exc)
        return
    assert verify_release(df, result.to_dict(), policy, k).ok
    assert truth <= len(result.suppressed)


def weighted_truth(recs, k, occurrences):
    """The problem (codes weighted by occurrences or not) and the cost of its
    lightest feasible set, by enumeration."""
    import itertools

    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    problem = build_problem(encode(df), policy, GROUPS, k, weigh_occurrences=occurrences)
    w = problem.cost()
    codes = sorted({c for p in problem.constraints for c in p})
    return problem, min(sum(w[list(s)]) for n in range(len(codes) + 1)
                        for s in itertools.combinations(codes, n) if feasible(problem, s))


@settings(max_examples=30, deadline=None)
@given(st.lists(record, min_size=3, max_size=9), st.integers(2, 3))
def test_occurrence_weighted_bound_is_the_weighted_minimum(recs, k):
    """Weighted by occurrences (Fig. S1A), the converged bound equals the
    lightest feasible set found by enumeration, and every round is below it."""
    problem, truth = weighted_truth(recs, k, occurrences=True)
    shrink = relaxed_min_suppression(problem, time_limit=30, shrink=True)
    assert shrink["optimal"] and shrink["bound"] == truth
    assert relaxed_min_suppression(problem, max_rounds=1, shrink=True)["bound"] <= truth


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=3, max_size=9), st.integers(2, 4), st.booleans(),
       st.integers(1, 4))
def test_holder_pair_bound_never_exceeds_the_relaxed_or_true_minimum(recs, k, occ, rounds):
    """The decomposition bound is a bound on (R), hence on the truth, for any
    number of share-moving rounds and either cost measure."""
    problem, truth = weighted_truth(recs, k, occurrences=occ)
    relaxed = relaxed_min_suppression(problem, time_limit=30)
    pair = holder_pair_bound(problem, rounds=rounds)
    assert relaxed["optimal"]
    assert 0 <= pair["bound"] <= relaxed["bound"] <= truth
    assert len(pair["history"]) == rounds and pair["bound"] == max(h[1] for h in pair["history"])


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=3, max_size=9), st.integers(2, 4), st.booleans(),
       st.integers(1, 300), st.sampled_from([0.5, 2.0, 8.0]), st.sampled_from([1, 3, 20000]))
def test_hull_bound_never_exceeds_the_relaxed_or_true_minimum(recs, k, occ, iterations, step,
                                                              max_sets):
    """The frequent-set hull bound is a bound on (R)'s LP, hence on (R) and
    the truth, after any number of steps of any length, for either cost
    measure, also when constraints are left out for too many sets."""
    problem, truth = weighted_truth(recs, k, occurrences=occ)
    relaxed = relaxed_min_suppression(problem, time_limit=30)
    hull = hull_lagrangian_bound(problem, iterations=iterations, step=step, max_sets=max_sets)
    assert relaxed["optimal"]
    assert 0 <= hull["bound"] <= relaxed["bound"] <= truth
    assert hull["iterations"] <= iterations


def test_hull_bound_reaches_the_minimum_on_the_hand_case():
    # one group per code, k = 2 (the hand case below): a1 must go for {a1, b1}
    # and a2, b2 for {a2, b2}; each constraint's only frequent set is {b1}
    # resp. none, so the hull relaxation is exact here: 3.
    recs = [{"a1", "b1"}, {"a2", "b2"}, {"a3"}, {"b1"}]
    apart = build_problem(encode(to_df(recs)), [["a1", "b1"], ["a2", "b2"]],
                          [[c] for c in ["a1", "a2", "a3", "b1", "b2"]], 2)
    assert hull_lagrangian_bound(apart, iterations=500)["bound"] == 3


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.integers(1, 5), st.data())
def test_maximal_frequent_sets_are_exactly_the_maximal_frequent_subsets(recs, k, data):
    """``_maximal_frequent`` against every subset of the chosen groups."""
    import itertools

    enc = encode(to_df(recs))
    group = build_problem(enc, [], GROUPS, k).group
    held = _record_groups(enc.matrix, group)
    gs = sorted(data.draw(st.sets(st.integers(0, int(group.max())), min_size=1), label="gs"))
    dense = held.toarray()[:, gs] > 0
    frequent = {t for n in range(1, len(gs) + 1) for t in itertools.combinations(range(len(gs)), n)
                if dense[:, list(t)].all(axis=1).sum() >= k}
    maximal = {t for t in frequent if not any(set(t) < set(u) for u in frequent)}
    got = _maximal_frequent(*_distinct_rows(held[:, gs]), k, 10 ** 6)
    assert {tuple(np.flatnonzero(row)) for row in got} == maximal and len(got) == len(maximal)
    if len(frequent) > 1:
        assert _maximal_frequent(*_distinct_rows(held[:, gs]), k, 1) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.integers(1, 5), st.data())
def test_pair_value_is_at_least_every_frequent_group_sets_weight(recs, k, data):
    """``_pair_value`` bounds max λ(T) over T ⊆ G(p) held by >= k records, for
    any non-negative λ, checked against every subset T, also with
    ``max_rows`` 0 (the single-holder fallback)."""
    import itertools

    df = to_df(recs)
    enc = encode(df)
    group = build_problem(enc, [], GROUPS, k).group
    groups = _record_groups(enc.matrix, group)
    held = groups.toarray() > 0
    p = data.draw(st.lists(st.integers(0, enc.n_codes - 1), min_size=1, unique=True), label="p")
    lam = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(p), max_size=len(p)),
                             label="lam"), dtype=float)
    gp = group[p]
    best = 0.0
    for n in range(1, len(set(gp)) + 1):
        for t in itertools.combinations(sorted(set(gp)), n):
            if held[:, list(t)].all(axis=1).sum() >= k:
                best = max(best, lam[np.isin(gp, t)].sum())
    for max_rows in (4000, 0):
        value, keep = _pair_value(groups, gp, lam, k, max_rows)
        assert value >= best - 1e-9 and keep.shape == gp.shape


def test_exact_bound_on_a_case_worked_by_hand():
    # k=2.  P1 {a1,b1}, P2 {a2,b2}, P3 {a3}, P4 {b1}.  Constraints {a1,b1}, {a2,b2}
    # (each held once).  Generalizing A={a1,a2,a3} and B={b1,b2}: P1, P2 hold both
    # items, so nothing need be suppressed.  With one group per code: a1 (held
    # once) must go for {a1,b1}, leaving b1 held by P1, P4; a2 and b2 are each
    # held once, so both must go for {a2,b2} -> 3.
    recs = [{"a1", "b1"}, {"a2", "b2"}, {"a3"}, {"b1"}]
    df = to_df(recs)
    policy = [["a1", "b1"], ["a2", "b2"]]
    together = build_problem(encode(df), policy, [["a1", "a2", "a3"], ["b1", "b2"]], 2)
    apart = build_problem(encode(df), policy, [[c] for c in ["a1", "a2", "a3", "b1", "b2"]], 2)
    assert brute_force_min_suppression(together) == 0
    assert exact_min_suppression(together)["bound"] == 0
    assert brute_force_min_suppression(apart) == 3
    assert exact_min_suppression(apart)["bound"] == 3
    assert relaxed_min_suppression(apart)["bound"] == 3
    assert not feasible(apart, [0, 1]) and feasible(apart, [0, 1, 4])


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=1, max_size=10), st.integers(2, 4))
def test_baselines_pass_the_verifier_and_aclip_never_suppresses(recs, k):
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    config = UGACLIPConfig(k, re_queries=0)
    if len(recs) >= k:  # an item of every code is held by all records
        result = aclip(df, policy, config, hierarchy=icd9cm())
        assert verify_release(df, result.to_dict(), policy, k).ok and result.suppressed == []
    try:
        result = suppression_only(df, policy, config, hierarchy=icd9cm())
    except Exception as exc:
        assert "would hold nothing" in str(exc)
        return
    assert verify_release(df, result.to_dict(), policy, k).ok
    assert all(len(item) == 1 for item in result.items)


@pytest.mark.parametrize("raw, want", [("25000", "250.00"), ("250.00", "250.00"),
                                       ("V1005", "V10.05"), ("E8889", "E888.9"),
                                       ("401", "401"), ("V25", "V25"), ("E849", "E849"),
                                       ("4011", "401.1"), ("OTHER", "OTHER"), ("-1", "-1")])
def test_dotted_forms(raw, want):
    assert dotted(raw) == want


def test_codes_are_placed_dotted_undotted_and_by_prefix():
    tree = icd9cm()
    assert place("25000", tree) == place("250.00", tree) == "25000"
    assert place("V1005", tree) == place("V10.05", tree)
    assert place("0421", tree) == "042"        # retired 4th digit: its category
    assert place("OTHER", tree) is None and place("-1", tree) is None


def test_undotted_codes_get_a_real_weight_and_il_is_never_a_false_zero():
    # two undotted diabetes codes generalized together: w > 0 from the tree,
    # and with M large IL underflows: reported as log10, the float as None.
    many = [f"X{i}" for i in range(1100)]
    recs = [{"25000", "V1005"}, {"25001", "V1005"}, {"V1005"}] + [{c} for c in many]
    df = to_df(recs)
    policy = [["25000", "V1005"]]
    result = ugaclip(df, policy, [["25000", "25001"]], UGACLIPConfig(2, re_queries=0),
                     hierarchy=icd9cm())
    m = result.metrics
    [row] = m["il_items"]
    assert row["item"] == ["25000", "25001"] and 0 < row["weight"] < 1
    assert row["il"] is None and m["il_total"] is None
    assert np.isfinite(m["il_log10_total"]) and m["il_log10_total"] < -300


@settings(max_examples=40, deadline=None)
@given(st.lists(record, min_size=3, max_size=9), st.integers(2, 3), st.data())
def test_plan_repair_and_planned_ugaclip(recs, k, data):
    """``plan.repair`` turns any set into a feasible one, never below the
    exact minimum; a feasible set only loses codes (the trim), a minimum one
    is left alone; UGACLIP guided by any plan passes the verifier and counts
    the plan in its metrics."""
    df, policy, problem = problem_of(recs, k)
    codes = sorted({c for p in problem.constraints for c in p})
    start = np.zeros(problem.matrix.shape[1], dtype=bool)
    start[data.draw(st.lists(st.sampled_from(codes), unique=True), label="start")
          if codes else []] = True
    grown = repair(problem, start)
    assert feasible(problem, np.flatnonzero(grown))
    if feasible(problem, np.flatnonzero(start)):
        assert (grown <= start).all()
    assert grown.sum() >= brute_force_min_suppression(problem)
    best = relaxed_min_suppression(problem, time_limit=30, shrink=True)["suppressed"]
    optimum = np.zeros_like(start)
    optimum[best] = True
    assert (repair(problem, optimum) == optimum).all()
    names = encode(df).codes
    for plan in (names[grown].tolist(), names[best].tolist()):
        try:
            result = ugaclip(df, policy, GROUPS, UGACLIPConfig(k, re_queries=0),
                             hierarchy=icd9cm(), plan=plan)
        except Exception as exc:  # refused: it would suppress every code
            assert "would hold nothing" in str(exc)
            continue
        assert verify_release(df, result.to_dict(), policy, k).ok
        assert result.metrics["plan"] == {"given": len(plan), "realised": False} or not plan


def test_suppression_plan_on_the_hand_case():
    # the hand case above with one group per code: the only minimum, {a1, a2, b2},
    # is found and is feasible; the bound is 3.
    recs = [{"a1", "b1"}, {"a2", "b2"}, {"a3"}, {"b1"}]
    enc = encode(to_df(recs))
    groups = [[c] for c in ["a1", "a2", "a3", "b1", "b2"]]
    plan = suppression_plan(enc, [["a1", "b1"], ["a2", "b2"]], groups, 2, seconds=10)
    assert plan["bound"] == plan["repaired"] == 3 and plan["bound_optimal"]
    problem = build_problem(enc, [["a1", "b1"], ["a2", "b2"]], groups, 2)
    assert feasible(problem, plan["codes"])
