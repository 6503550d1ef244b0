"""UGACLIP (Loukides et al. 2010, SI Algorithm 2) on hand-traced cases, the
IL worked example, the metrics, the bundled utility policies and the config."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import from_parent_map, icd9cm
from anonymizers.records import from_sets
from anonymizers.ugaclip import (
    UGACLIPConfig,
    UtilityPolicy,
    load_utility_policy,
    ugaclip,
)
from anonymizers.ugaclip.algorithm import Run
from anonymizers.ugaclip.loss import (
    SemanticWeights,
    information_loss,
    log10_information_loss,
    log_score,
)
from anonymizers.ugaclip.metrics import relative_errors
from anonymizers.ugaclip.release import released_matrix
from anonymizers.verify.ugaclip import verify_release

# * -> A -> A1 -> a1, a2;  A -> A2 -> a3;  * -> B -> b1, b2.  5 leaves, so
# w({a1,a2}) = 2/5 (LCA A1), w({a1,a3}) = w({a2,a3}) = 3/5 (LCA A), w({b1,b2}) = 2/5.
TREE = from_parent_map({"A": "*", "A1": "A", "A2": "A", "a1": "A1", "a2": "A1", "a3": "A2",
                        "B": "*", "b1": "B", "b2": "B"})
U_AB = [["a1", "a2", "a3"], ["b1", "b2"]]


def table(records: list) -> pd.DataFrame:
    rows = [(f"P{i + 1}", c) for i, rec in enumerate(records) for c in rec]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def run(records, policy, utility, k, **kw):
    """UGACLIP plus its trace (code indices follow the sorted vocabulary)."""
    df = table(records)
    result = ugaclip(df, policy, utility, UGACLIPConfig(k, **kw), hierarchy=TREE)
    assert verify_release(df, result.to_dict(), policy, k).ok
    enc = from_sets(records)
    weights = SemanticWeights(enc.codes, TREE)
    trace_run = Run(enc, [list(p) for p in policy], UtilityPolicy.from_lists(utility), k, weights)
    trace_run.execute()
    return result, trace_run.trace


def released(result) -> Counter:
    return Counter(frozenset(tuple(i) for i in r["items"]) for r in result.to_dict()["records"])


def test_generalization_picks_the_partner_of_least_il():
    # P1 {a1,b1}, P2 {a2,b1}, P3 {a3}, P4 {b2}; k=2; P = [{a1,b1}] (support 1).
    # Line 6: a1 (item support 1) is less frequent than b1 (2).  Line 9: a1+a2
    # and a1+a3 both give size 2 and support 2; w is 2/5 vs 3/5, so a2.  Then
    # {a1,a2} and b1 are held together by P1 and P2: 2 >= k, satisfied.
    result, trace = run([["a1", "b1"], ["a2", "b1"], ["a3"], ["b2"]], [["a1", "b1"]], U_AB, 2)
    assert trace == [("select", 0), ("generalize", 0, 1)]
    assert result.items == [("a1", "a2"), ("a3",), ("b1",), ("b2",)]
    assert result.suppressed == []
    assert released(result) == Counter({frozenset({("a1", "a2"), ("b1",)}): 2,
                                        frozenset({("a3",)}): 1, frozenset({("b2",)}): 1})
    # IL = (2^2-1)/(2^5-1) x 2/5 x 2/4
    [row] = result.metrics["il_items"]
    assert row["weight"] == pytest.approx(0.4) and row["support"] == 2
    assert row["il"] == pytest.approx(3 / 31 * 0.4 * 0.5)
    assert result.metrics["il_total"] == pytest.approx(3 / 31 * 0.4 * 0.5)
    assert result.metrics["utility_constraints"]["n_satisfied"] == 2


def test_il_trades_support_against_weight():
    # P1 {a1,b1}, P2 {a2,b1}, P3 {a2}, P4 {a2}, P5 {a3}, P6 {b2}; k=2.
    # a1+a2: support 4, w 2/5 -> 3 x 0.4 x 4 = 4.8;  a1+a3: support 2, w 3/5 ->
    # 3 x 0.6 x 2 = 3.6 (in units of 1/((2^M-1) N)): a3 wins.  {a1,a3}&b1: P1
    # only.  Line 6 again: {a1,a3} and b1 both have item support 2; a1 has the
    # lower code support, so a1, whose only partner left is a2: {a1,a2,a3}
    # (support 5), held with b1 by P1 and P2.
    records = [["a1", "b1"], ["a2", "b1"], ["a2"], ["a2"], ["a3"], ["b2"]]
    result, trace = run(records, [["a1", "b1"]], U_AB, 2)
    assert trace == [("select", 0), ("generalize", 0, 2), ("generalize", 0, 1)]
    assert result.items == [("a1", "a2", "a3"), ("b1",), ("b2",)]


def test_constraint_suppressed_when_generalization_cannot_help():
    # P1 {a1,b1}, P2 {a2}, P3 {a3}, P4 {b1}, P5 {b2}; k=2; P = [{a1,b1}].
    # 1. a1 (support 1) + a2 (w 2/5) beats a3 (w 3/5): {a1,a2}; P1 alone holds it with b1.
    # 2. {a1,a2} and b1 tie at 2; a1 has code support 1: a1 + a3 -> {a1,a2,a3}.
    # 3. item supports 3 vs 2: b1 + b2 -> {b1,b2}; still only P1 holds both.
    # 4. both items are whole utility constraints with support >= k: nothing
    #    left to do (line 5 fails), so line 17 suppresses p item by item: dropping
    #    either item leaves the other held by 3 records (tie; 1 code each; item
    #    supports 3 and 3), so the first item's code a1 goes, and {b1} is then
    #    held by P1, P4, P5: b1 stays (the literal reading would suppress it too).
    records = [["a1", "b1"], ["a2"], ["a3"], ["b1"], ["b2"]]
    result, trace = run(records, [["a1", "b1"]], U_AB, 2)
    assert trace == [("select", 0), ("generalize", 0, 1), ("generalize", 0, 2),
                     ("generalize", 3, 4), ("suppress-constraint", 0)]
    assert result.items == [("a2", "a3"), ("b1", "b2")] and result.suppressed == ["a1"]
    assert released(result) == Counter({frozenset({("b1", "b2")}): 3,
                                        frozenset({("a2", "a3")}): 2})
    m = result.metrics
    assert (m["suppressed_codes"], m["suppressed_occurrences"]) == (1, 1)
    assert m["steps"] == {"outer_iterations": 1, "generalizations": 3, "code_suppressions": 0,
                          "constraint_suppressions": 1, "restored": 0, "reselections": 0,
                          "exchanges": 0, "exchange_returned": 0, "group_restored": 0,
                          "swaps": 0}
    assert m["privacy_constraints"]["partly_suppressed"] == 1
    assert m["utility_constraints"]["n_satisfied"] == 1
    # {a2,a3} after a1 left: LCA A, w = 3/5, support 2 of 5
    assert m["il_items"][0]["il"] == pytest.approx(3 / 31 * 0.6 * 2 / 5)


def test_one_code_utility_constraint_suppresses_its_rare_code():
    # P1 {x,y}, P2 {y}, P3 {y}; U = [{x},{y}]; k=2.  x cannot be generalized
    # (line 8 fails) and appears in 1 < k records: line 12 suppresses it; {y}
    # is then held by 3 records.
    result, trace = run([["x", "y"], ["y"], ["y"]], [["x", "y"]], [["x"], ["y"]], 2)
    assert trace == [("select", 0), ("suppress", 0)]
    assert result.suppressed == ["x"] and result.items == [("y",)]
    assert result.metrics["privacy_constraints"]["partly_suppressed"] == 1
    assert result.metrics["unplaced_codes"] == ["x", "y"]


def test_uncovered_codes_generalize_only_among_themselves():
    # P1 {r1,c}, P2 {r2,c}, P3 {c2}; U = [{c,c2}]; r1, r2 are in no constraint.
    # Vocabulary c, c2, r1, r2.  r1 (support 1) may join r2 only, never c or c2:
    # {r1,r2} and c are then held by P1 and P2.
    result, trace = run([["r1", "c"], ["r2", "c"], ["c2"]], [["c", "r1"]], [["c", "c2"]], 2)
    assert trace == [("select", 0), ("generalize", 2, 3)]
    assert result.items == [("c",), ("c2",), ("r1", "r2")]
    row = result.metrics["il_items"][0]
    assert row["weight"] == 1.0  # unplaced codes: fallback weight
    half, _ = run([["r1", "c"], ["r2", "c"], ["c2"]], [["c", "r1"]], [["c", "c2"]], 2,
                  unplaced_weight=0.5)
    assert half.metrics["il_items"][0]["weight"] == 0.5


def test_constraint_broken_by_a_later_suppression_is_taken_up_again():
    # P1 {a1,c}, P2 {a2,c}, P3 {a2,x}, P4 {x}, P5 {x}; U = [{a1,a2},{x}]; k=2.
    # q={a1,c} and p={a2,x} both have support 1: q is listed first.
    # q: a1 + a2 -> {a1,a2}; q held by P1, P2.
    # p: {a1,a2} (support 3) and x (3) can be neither generalized nor
    #    suppressed one by one; only P3 holds both.  Line 17, item by item:
    #    dropping either leaves the other held by 3 (tie; 1 code each; item
    #    supports 3, 3): the first item's code a2 goes; {x} is then held by 3.
    # {a1,a2} shrinks to {a1}: q is held by P1 alone again.  q: a1 has no
    #    partner left and support 1 < 2: suppressed; {c} is held by 2.
    records = [["a1", "c"], ["a2", "c"], ["a2", "x"], ["x"], ["x"]]
    policy = [["a1", "c"], ["a2", "x"]]
    result, trace = run(records, policy, [["a1", "a2"], ["x"]], 2)
    assert trace == [("select", 0), ("generalize", 0, 1), ("select", 1),
                     ("suppress-constraint", 1), ("select", 0), ("suppress", 0)]
    assert result.items == [("c",), ("x",)] and result.suppressed == ["a1", "a2"]
    status = result.metrics["privacy_constraints"]
    assert (status["fully_suppressed"], status["partly_suppressed"]) == (0, 2)


def test_most_supported_constraint_first_ties_in_listed_order():
    # k=4, codes in one-code constraints, supports e:1, f:3, g:2, h:2: each is
    # suppressed in turn, in the order f, g, h, e.
    # z, in no constraint, is kept, so the release is not empty.
    records = [["e"], ["f"], ["f"], ["f"], ["g"], ["g"], ["h"], ["h"]] + [["z"]] * 4
    policy = [["e"], ["f"], ["g"], ["h"]]
    _, trace = run(records, policy, [["e"], ["f"], ["g"], ["h"]], 4)
    assert [step[1] for step in trace if step[0] == "select"] == [1, 2, 3, 0]


def test_vacuous_constraints_are_left_alone():
    result, trace = run([["a1"], ["a3"]], [["a1", "zz"], ["a1", "a3"]], U_AB, 2)
    assert trace == [] and result.suppressed == []
    assert result.metrics["privacy_constraints"]["vacuous"] == 2


def test_a_release_that_would_keep_nothing_is_refused():
    records = [["a1", "b1"], ["a2"], ["a1", "b2"]]
    with pytest.raises(InputError, match="every one of the 4 codes would be suppressed"):
        run(records, [["a1", "b1"], ["a2"], ["a1", "b2"]], U_AB, 10)


def test_empty_input():
    df = pd.DataFrame({"patient_id": [], "code": []}, dtype=str)
    result = ugaclip(df, [], [], UGACLIPConfig(3), hierarchy=TREE)
    assert result.to_dict()["records"] == [] and result.items == []
    assert verify_release(df, result.to_dict(), [], 3).ok


def test_pseudonyms_are_fresh_sorted_and_seeded():
    records = [["a1", "b1"], ["a2", "b1"], ["a3"], ["b2"]]
    first, _ = run(records, [["a1", "b1"]], U_AB, 2, seed=7)
    again, _ = run(records, [["a1", "b1"]], U_AB, 2, seed=7)
    other, _ = run(records, [["a1", "b1"]], U_AB, 2, seed=8)
    ids = [r["patient_id"] for r in first.to_dict()["records"]]
    assert ids == sorted(ids) and not set(ids) & {"P1", "P2", "P3", "P4"}
    assert first.to_dict() == again.to_dict()
    owner = {r["patient_id"]: r["items"] for r in first.to_dict()["records"]}
    owner_other = {r["patient_id"]: r["items"] for r in other.to_dict()["records"]}
    assert owner != owner_other  # same records, dealt to other pseudonyms
    assert set(first.to_dict()) == {"k", "items", "suppressed", "records", "metrics"}


# ---- Definition 2 and its worked example ---------------------------------------

def test_il_worked_example_asthma():
    # SI: IL(i~1) = (2^3 - 1)/(2^9 - 1) x 0.375 x 6/9 ~ 0.0034
    il = information_loss(3, 0.375, 6, 9, 9)
    assert il == pytest.approx(7 / 511 * 0.375 * 6 / 9)
    assert round(il, 4) == 0.0034
    assert log10_information_loss(3, 0.375, 6, 9, 9) == pytest.approx(math.log10(il))


def test_semantic_weight_from_icd9_hierarchy():
    codes = np.array(["493.00", "493.01", "493.02", "-1"], dtype=object)
    w = SemanticWeights(codes, icd9cm())
    assert w.weight([0, 1, 2]) == pytest.approx(3 / 14567)   # LCA 493.0
    assert w.weight([0]) == 0.0
    assert w.weight([0, 3]) == 1.0                           # -1: unplaced
    assert w.unplaced == ["-1"]
    # merging item {493.00} with {493.01,493.02} and with {-1}, at once
    row, placed = w.lca_row([0])
    rows = np.stack([w.lca_row([1, 2])[0], w.lca_row([3])[0]])
    merged = w.merged(row, placed, rows, np.array([True, False]))
    assert merged.tolist() == [w.weight([0, 1, 2]), 1.0]


def test_semantic_weight_lca_on_a_small_tree():
    w = SemanticWeights(np.array(["a1", "a2", "a3", "b1"], dtype=object), TREE, fallback=0.7)
    assert w.weight([0, 1]) == pytest.approx(2 / 5) and w.weight([1, 2]) == pytest.approx(3 / 5)
    assert w.weight([0, 3]) == pytest.approx(5 / 5) and w.unplaced == []


def test_il_for_many_codes_underflows_but_log_score_orders():
    assert information_loss(2, 0.5, 10, 2000, 100) == 0.0
    assert math.isfinite(log10_information_loss(2, 0.5, 10, 2000, 100))
    assert log_score(2, 0.4, 4) > log_score(2, 0.6, 2)  # 4.8 > 3.6
    with pytest.raises(ValueError):
        information_loss(0, 0.5, 1, 5, 5)


def test_relative_error_as_the_si_defines_it():
    # R1 {a1}, R2 {a2}, R3 {a1,b}, R4 {a1,a2}; items {a1,a2} (0), {b} (1).
    recs = from_sets([["a1"], ["a2"], ["a1", "b"], ["a1", "a2"]])  # codes a1, a2, b
    item_of = np.array([0, 0, 1])
    items = [("a1", "a2"), ("b",)]
    rel = released_matrix(recs, item_of, 2)
    queries = [np.array([0]), np.array([0, 2]), np.array([0, 1])]
    re = relative_errors(recs, rel, item_of, items, queries)
    # {a1}: a=3, e = 4 records x 2^1/3 = 8/3;  {a1,b}: a=1, e = 1 x 2/3 x 1;
    # {a1,a2}: a=1, e = 4 x 2^0/3 (both codes of one item)
    assert re == pytest.approx([abs(3 - 8 / 3) / 3, 1 / 3, 1 / 3])
    suppressed = np.array([0, -1, 1])
    re2 = relative_errors(recs, released_matrix(recs, suppressed, 2), suppressed,
                          [("a1",), ("b",)], [np.array([1])])
    assert re2.tolist() == [1.0]


def test_relative_error_metric_is_reported_per_query_size():
    result, _ = run([["a1", "b1"], ["a2", "b1"], ["a3"], ["b2"]], [["a1", "b1"]], U_AB, 2,
                    re_query_sizes=(1, 2), re_queries=30)
    re = result.metrics["relative_error"]
    assert re["q1"]["n"] == 30 and 0 <= re["q1"]["mean"] and re["q2"]["n"] == 30
    none, _ = run([["a1", "b1"]], [], U_AB, 2, re_queries=0)
    assert none.metrics["relative_error"] == {}


# ---- utility policies --------------------------------------------------------------

def test_bundled_pnas2010_policies():
    full = load_utility_policy("pnas2010")
    assert len(full.constraints) == 19
    assert dict(zip(full.names, full.constraints))["Asthma"] == ("493.00", "493.01", "493.02")
    assert len(load_utility_policy("pnas2010-k2").constraints) == 19
    k25 = load_utility_policy("pnas2010-k25")
    assert "Renal cancer" not in k25.names and "Sickle-cell disease" not in k25.names
    assert len(k25.constraints) == 15
    assert ("49300", "49301", "49302") in load_utility_policy("pnas2010", strip_dots=True).constraints
    with pytest.raises(ParameterError):
        load_utility_policy("pnas2010-k7")
    with pytest.raises(ParameterError):
        load_utility_policy("no-such-policy")


def test_utility_policy_from_file_and_validation(tmp_path):
    path = tmp_path / "u.json"
    path.write_text('[["a", "b"], ["c"]]')
    assert load_utility_policy(str(path)).constraints == (("a", "b"), ("c",))
    path.write_text('{"constraints": [{"name": "D", "codes": ["a"]}]}')
    assert load_utility_policy(str(path)).names == ("D",)
    with pytest.raises(InputError, match="disjoint"):
        UtilityPolicy.from_lists([["a", "b"], ["b"]])
    with pytest.raises(InputError):
        UtilityPolicy.from_lists([[]])
    path.write_text("{nope")
    with pytest.raises(InputError):
        load_utility_policy(str(path))


@pytest.mark.parametrize("kw", [{"k": 0}, {"k": 2.0}, {"k": True}, {"k": 2, "seed": -1},
                                {"k": 2, "re_queries": -1}, {"k": 2, "re_query_sizes": ()},
                                {"k": 2, "re_query_sizes": (0,)}, {"k": 2, "unplaced_weight": 0},
                                {"k": 2, "unplaced_weight": 1.5}])
def test_config_rejects_bad_parameters(kw):
    with pytest.raises(ParameterError):
        UGACLIPConfig(**kw)


def test_missing_column_is_an_input_error():
    with pytest.raises(InputError, match="code"):
        ugaclip(pd.DataFrame({"patient_id": ["a"]}), [], [], UGACLIPConfig(2), hierarchy=TREE)


def test_restore_gives_back_a_code_no_constraint_needs_suppressed():
    # k=2, utility {a2,a3}, {b1,b2}.  P1 {a3,b2,d1} is selected first: a3+a2 and
    # b2+b1 are generalized, yet only P1 holds {a2,a3}, {b1,b2} and d1, so line
    # 17 suppresses b2, then d1 ({a2,a3} alone is held by P1, P2, P4).  Then
    # {a2,b1}: b1 (item support 1, no partner left) is suppressed by line 12.
    # Restore, pass 1: b1 is tried first (code order; each code lies in 1 or 2
    # constraints: b1 and d1 in 1) and cannot come back ({a2,b1}: P4 alone holds
    # b1); nor d1 ({a2,a3},{d1} held by P1 only).  b2 comes back alone:
    # {a3,b2,d1} -> {a2,a3},{b2} held by P1, P2; {a2,b2} likewise.  Pass 2: b1
    # joins {b2}: {a2,b1} -> {a2,a3},{b1,b2} held by P2, P4.  Pass 3: nothing.
    records = [["a3", "b2", "d1"], ["a2", "b2"], ["d1"], ["a2", "b1"]]
    policy = [["a3", "b2", "d1"], ["a2", "b1"], ["a2", "b2"]]
    utility = [["a2", "a3"], ["b1", "b2"]]
    result, trace = run(records, policy, utility, 2)
    assert trace[-3:] == [("suppress", 2), ("restore", 3, None), ("restore", 2, 3)]
    assert result.items == [("a2", "a3"), ("b1", "b2")] and result.suppressed == ["d1"]
    assert result.metrics["steps"]["restored"] == 2


def test_exchange_suppresses_one_code_to_give_back_two():
    # k=2, utility {a1,a2,a3}, {b1,b2}, {c1,c2}, {d1}; P = [{a2,a3,c1}].
    # a2+a3, then +a1 (held by P3, P4); c1+c2 (P1, P2, P4): together P4 only.
    # Line 17: both items lie in the one unprotected constraint; dropping the
    # a-item leaves {c1,c2} with 3 records, dropping the c-item leaves 2, so
    # a2 and a3 go.  Restore: neither comes back ({a1,a2} with {c1,c2}: P4
    # only).  Exchange: c1 blocks both returns; suppressing c1 (p's only code
    # in its item; {c2} is held by P2 alone but no constraint holds c2) lets
    # a2 and a3 back into {a1}, held by P3, P4: 1 code suppressed, not 2.
    records = [["c1"], ["b1", "c2"], ["a1", "b1"], ["a2", "a3", "c1"], ["b1", "b2", "d1"]]
    utility = [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2"], ["d1"]]
    result, trace = run(records, [["a2", "a3", "c1"]], utility, 2)
    assert trace[-3:] == [("suppress-constraint", 1), ("suppress-constraint", 2),
                          ("exchange", 5, [1, 2])]
    assert result.items == [("a1", "a2", "a3"), ("b1",), ("b2",), ("c2",), ("d1",)]
    assert result.suppressed == ["c1"]
    steps = result.metrics["steps"]
    assert (steps["exchanges"], steps["exchange_returned"], steps["restored"]) == (1, 2, 0)
