"""UGACLIP realising its suppression plan (``realise_plan``,
docs/methods/ugaclip.md#ugaclip-realise) against the verifier: with a
feasible plan Algorithm 2 suppresses nothing more, and the release never
suppresses more codes or occurrences than the plan; with any plan given the
release still passes the verifier."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.errors import ParameterError
from anonymizers.hierarchy import icd9cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.bound import build_problem, feasible
from anonymizers.ugaclip.plan import suppression_plan
from anonymizers.verify.ugaclip import verify_release

CODES = ["a1", "a2", "a3", "b1", "b2", "c1", "c2", "d1"]
GROUPINGS = {"groups": [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2"], ["d1"]],
             "partial": [["a1", "a2", "a3"], ["b1", "b2"]],   # c*, d1 in no group
             "singletons": [[c] for c in CODES]}               # generalization impossible
record = st.frozensets(st.sampled_from(CODES), min_size=1, max_size=5)


def to_df(recs) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, rec in enumerate(recs) for c in sorted(rec)]
    return pd.DataFrame(rows, columns=["patient_id", "code"], dtype=str)


def run(df, policy, groups, k, plan=None, **config):
    """The release, or None when refused because it would keep no code;
    ``config``: UGACLIPConfig's plan fields."""
    try:
        return ugaclip(df, policy, groups, UGACLIPConfig(k, re_queries=0, **config),
                       hierarchy=icd9cm(), plan=plan)
    except Exception as exc:  # noqa: BLE001 - only the documented refusal is allowed
        assert "would hold nothing" in str(exc)
        return None


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.integers(1, 4),
       st.sampled_from(sorted(GROUPINGS)), st.booleans())
def test_realised_plan_passes_the_verifier_and_never_exceeds_the_plan(recs, k, grouping,
                                                                     occurrences):
    df = to_df(recs)
    groups = GROUPINGS[grouping]
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    enc = encode(df)
    plan = suppression_plan(enc, policy, groups, k, seconds=10, weigh_occurrences=occurrences)
    problem = build_problem(enc, policy, groups, k)
    assert feasible(problem, plan["codes"])
    occ = np.asarray(enc.matrix.sum(axis=0)).ravel()
    result = run(df, policy, groups, k, plan=enc.codes[plan["codes"]].tolist(),
                 realise_plan=True)
    if result is None:
        return
    m = result.metrics
    assert verify_release(df, result.to_dict(), policy, k).ok
    assert m["steps"]["code_suppressions"] == m["steps"]["constraint_suppressions"] == 0
    assert m["steps"]["plan_suppressions"] == len(plan["codes"])
    assert m["suppressed_codes"] <= len(plan["codes"])
    assert m["suppressed_occurrences"] <= occ[plan["codes"]].sum()
    assert m["plan"] == {"given": len(plan["codes"]), "realised": True} or not plan["codes"]


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.integers(1, 4),
       st.sampled_from(sorted(GROUPINGS)),
       st.lists(st.sampled_from(CODES + ["zz9"]), unique=True))
def test_any_given_plan_realised_passes_the_verifier(recs, k, grouping, plan):
    """An arbitrary plan (infeasible, empty, every code, codes absent from the
    data) realised: Algorithm 2 suppresses what it must, as without a plan."""
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    result = run(df, policy, GROUPINGS[grouping], k, plan=plan, realise_plan=True)
    if result is not None:
        assert verify_release(df, result.to_dict(), policy, k).ok


@settings(max_examples=20, deadline=None)
@given(st.lists(record, min_size=2, max_size=10), st.integers(2, 3), st.booleans())
def test_computed_plan_realised(recs, k, occurrences):
    """``plan_seconds`` computes the plan inside ``ugaclip``; the release
    stays within the plan it reports."""
    df = to_df(recs)
    policy = [list(c) for c in extract_policy(df, PPEConfig(k)).constraints]
    result = run(df, policy, GROUPINGS["groups"], k, plan_seconds=5, realise_plan=True,
                 plan_weights="occurrences" if occurrences else "codes")
    if result is None:
        return
    m = result.metrics
    assert verify_release(df, result.to_dict(), policy, k).ok
    assert m["plan"]["realised"] and m["suppressed_codes"] <= m["plan"]["repaired"]
    if occurrences:
        assert m["plan"]["weights"] == "occurrences"
        assert m["suppressed_occurrences"] <= m["plan"]["cost"]


def test_realised_plan_on_a_hand_case():
    # a1 and b1 together in one record only: {a1, b1} fails k=2. Suppressing b1
    # (the plan) lets a1 join a2 in one item {a1, a2}, held by two records.
    df = to_df([{"a1", "b1"}, {"a2"}, {"b2"}, {"b2"}])
    policy = [["a1", "b1"]]
    groups = [["a1", "a2"], ["b1", "b2"]]
    result = run(df, policy, groups, 2, plan=["b1"], realise_plan=True)
    assert result.suppressed == ["b1"]
    assert verify_release(df, result.to_dict(), policy, 2).ok
    assert result.metrics["steps"]["generalizations"] == 1


def test_bad_plan_options_are_refused():
    df = to_df([{"a1"}, {"a1"}])
    with pytest.raises(ParameterError, match="plan_weights"):
        UGACLIPConfig(2, plan_seconds=1, plan_weights="rows")
    with pytest.raises(ParameterError, match="realise_plan"):
        ugaclip(df, [["a1"]], [["a1"]], UGACLIPConfig(2, realise_plan=True))
