"""The two opt-in deviations of LDA (``member_weighted``, ``refine_rounds``;
benchmarks/lda.md): against the verifier on random data, the batched costs
against exact A-GS, and what each promises about the loss."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.errors import ParameterError
from anonymizers.hierarchy import icd9cm
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.alignment import Pairs, ags
from anonymizers.longitudinal.batch import CostModel, ags_costs
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.longitudinal.hierarchies import age_hierarchy
from anonymizers.longitudinal.loss import lm
from anonymizers.verify.longitudinal import verify_lda
from tests.anonymizers.test_longitudinal_alignment import encode, encoded

CODES = ["401.1", "4019", "401.0", "250.00", "25001", "272.4", "V15.4", "E9500", "486",
         "-1", "780.79"]
KNOWN = ["4011", "4019", "4010", "25000", "25001", "2724", "V154", "486", "4280", "41401"]
pair = st.tuples(st.sampled_from(CODES), st.integers(0, 130))
cohort = st.lists(st.lists(pair, min_size=1, max_size=9), min_size=1, max_size=14)


def frame(trajectories) -> pd.DataFrame:
    rows = [(f"id{i}", c, a) for i, t in enumerate(trajectories) for c, a in t]
    return pd.DataFrame(rows, columns=["patient_id", "code", "age"])


def released(df, config):
    try:
        return lda(df, config)
    except NothingToRelease:
        return None


@settings(max_examples=60, deadline=None)
@given(cohort, st.integers(1, 4), st.booleans(), st.integers(0, 2), st.integers(0, 3))
def test_deviations_pass_the_verifier(trajectories, k, weighted, rounds, seed):
    df = frame(trajectories)
    config = LDAConfig(k=k, seed=seed, member_weighted=weighted, refine_rounds=rounds)
    if len(trajectories) < k:
        with pytest.raises(NothingToRelease):
            lda(df, config)
        return
    result = released(df, config)
    if result is None:  # the refusal itself is tested in test_longitudinal_properties
        return
    verdict = verify_lda(result.records, result.pseudonym_map, df, k)
    assert verdict.ok, verdict.violations
    m = result.metrics
    assert k <= m["min_cluster_size"] and m["max_cluster_size"] <= max(k, 2 * k - 1)
    assert len(result.patients) == len(trajectories)


@settings(max_examples=40, deadline=None)
@given(cohort, st.integers(2, 3), st.booleans(), st.integers(0, 3))
def test_refinement_never_raises_the_weighted_loss(trajectories, k, weighted, seed):
    """A kept change lowers the two clusters' part of n * (w ILM + w ALM)."""
    df = frame(trajectories)
    if len(trajectories) < k:
        return
    before = released(df, LDAConfig(k=k, seed=seed, member_weighted=weighted))
    after = released(df, LDAConfig(k=k, seed=seed, member_weighted=weighted, refine_rounds=2))
    if before is None or after is None:
        return
    total = [0.5 * r.metrics["ilm"] + 0.5 * r.metrics["alm"] for r in (before, after)]
    assert total[1] <= total[0] + 1e-9


def test_refinement_lowers_the_loss_where_mdav_left_a_bad_cluster():
    """Two tight groups of three and two stragglers: at k = 2 some round of
    refinement finds a cheaper partition than MDAV's, or MDAV's was already
    optimal for moves and swaps; in both cases the loss does not rise and the
    release still verifies (a fixed case beside the random ones)."""
    a = [("4011", 70), ("25000", 71), ("2724", 72)]
    b = [("4280", 50), ("41401", 51), ("486", 52)]
    trajs = [a, a, a, b, b, b, [("4019", 70), ("486", 52)], [("41401", 71)]]
    df = frame(trajs)
    base = lda(df, LDAConfig(k=2, seed=1))
    ref = lda(df, LDAConfig(k=2, seed=1, refine_rounds=3))
    assert verify_lda(ref.records, ref.pseudonym_map, df, 2).ok
    loss = [r.metrics["ilm"] + r.metrics["alm"] for r in (base, ref)]
    assert loss[1] <= loss[0] + 1e-9


def test_member_weighting_is_an_ags_reading():
    with pytest.raises(ParameterError, match="member_weighted"):
        LDAConfig(k=2, alignment="baseline", member_weighted=True)


def test_one_member_is_algorithm_3():
    """x_members = 1 is A-GS as written, bit for bit."""
    trees, (x, y) = encode([[("4011", 70), ("25000", 71)], [("4019", 70), ("2724", 75)]],
                           icd9cm(), age_hierarchy())
    one, plain = ags(x, y, trees, 0.5, 0.5, 0.2, 0.1, 1), ags(x, y, trees, 0.5, 0.5, 0.2, 0.1)
    assert np.array_equal(one.i, plain.i) and np.array_equal(one.a, plain.a)
    assert np.array_equal(one.r, plain.r)


trajectory = st.lists(st.tuples(st.sampled_from(KNOWN), st.integers(1, 128)),
                      min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(st.lists(trajectory, min_size=2, max_size=6), st.integers(2, 5),
       st.sampled_from([0.5, 0.3]))
def test_batched_member_weighted_costs_equal_exact_alignments(trajs, members, w_icd):
    trees, pairs, enc = encoded(trajs)
    model = CostModel(enc, trees, w_icd, 1 - w_icd)
    x = ags(pairs[0], pairs[-1], trees, w_icd, 1 - w_icd).trajectory
    exact = [r.ilm + r.alm for r in
             (ags(x, p, trees, w_icd, 1 - w_icd, 0, 0, members) for p in pairs)]
    got = ags_costs(model, x, np.arange(len(pairs)), members)
    assert got == pytest.approx(exact, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(trajectory, min_size=2, max_size=5), st.sampled_from([0.5, 0.3]))
def test_member_weighted_cost_is_the_clusters_loss(trajs, w_icd):
    """Aligning members one after another with X weighted by its members,
    the accumulated cost is the members' summed pair losses (Definition 4,
    the release's loss unnormalized): the reading's reason to exist."""
    trees, pairs = encode(trajs, icd9cm(), age_hierarchy())
    x, ilm, alm, where = pairs[0], 0.0, 0.0, [np.arange(len(pairs[0]))]
    for m, y in enumerate(pairs[1:], start=1):
        res = ags(x, y, trees, w_icd, 1 - w_icd, ilm, alm, m)
        h, j = res.matches[:, 0], res.matches[:, 1]
        old2new = np.full(len(x) + 1, -1)
        old2new[h] = np.arange(len(h))
        where = [old2new[np.where(p >= 0, p, len(x))] for p in where]
        mine = np.full(len(y), -1)
        mine[j] = np.arange(len(j))
        where.append(mine)
        x, ilm, alm = res.trajectory, res.ilm, res.alm
    loss = 0.0
    for p, pos in zip(pairs, where):
        at = np.maximum(pos, 0)
        to_icd = np.where(pos >= 0, x.icd[at], 0) if len(x) else np.zeros(len(p), int)
        to_age = np.where(pos >= 0, x.age[at], 0) if len(x) else np.zeros(len(p), int)
        loss += (w_icd * lm(trees.icd, p.icd, p.icd_gen, to_icd).sum()
                 + (1 - w_icd) * lm(trees.age, p.age, p.age_gen, to_age).sum())
    assert ilm + alm == pytest.approx(loss, abs=1e-9)
    assert isinstance(x, Pairs)


def _released_ages(result) -> dict:
    """patient_id -> released age label (one-pair trajectories)."""
    rows = result.pseudonym_map.merge(result.records, left_on="pseudonym",
                                      right_on="patient_id", suffixes=("", "_released"))
    return dict(zip(rows["patient_id"], rows["age"]))


def test_one_round_moves_the_straggler_out_of_the_root_cluster():
    """Five one-pair trajectories, all code 401.1, ages p0 = p1 = 10, p2 = 99,
    p3 = 100, p4 = 120; k = 2, w_ICD = w_Age = 0.5.  The age tree is the
    binary tree over 1..128 (IV.4.4), so an age generalized to a node of L
    ages costs L / 128 (Definition 4); the code never changes, ILM = 0.

    MDAV (IV.3.2): the most frequent trajectory is (401.1, 10); every other
    age meets 10 only at the root, so p2, p3, p4 tie at the largest cost and
    the first, p2, is r.  Its cheapest neighbour is p3 (99 and 100 meet at
    99-100, 2 * 2/128), so MDAV forms {p2, p3}, released as 99-100, and the
    three left, fewer than 2k, form {p4, p0, p1}, whose ages meet only at
    the root: released '*'.  n * ALM = 2 * 2/128 + 3 * 1 = 3.03125, ALM =
    0.60625.

    One refine round: the changes of one move or one swap are
    - move p4 to {p2, p3} (3 > k members in A, 2 < 2k - 1 in B): ages
      99, 100, 120 meet at 97-128, 3 * 32/128 = 0.75, and {p0, p1} is 10,
      loss 0; total 0.75 < 3.03125;
    - move p0 (or p1): {p1, p4} at '*' (2) and {p0, p2, p3} at '*' (3): 5;
    - swap p4 with p2 (or p3): {p0, p1, p2} at '*' (3), {p3, p4} at 97-128
      (2 * 32/128): 3.5;  swap p0 (or p1) with p2 or p3: at least 2 + 2 = 4.
    Only the move of p4 lowers the loss, and its estimate is positive
    (share[p4] = the A-GS cost of {p4, p0, p1}, 0.5 * (1 + 1) + 0.5 * 1 = 1.5,
    minus that of {p0, p1}, 0; inc[p4, B] = 0.5 * (30 + 32) / 128 = 0.24),
    so it is kept whatever order the changes are tried in: {p0, p1} released
    as 10 and {p2, p3, p4} as 97-128, ALM = 0.75 / 5 = 0.15."""
    df = frame([[("4011", 10)], [("4011", 10)], [("4011", 99)], [("4011", 100)],
                [("4011", 120)]])
    before = lda(df, LDAConfig(k=2, seed=0))
    after = lda(df, LDAConfig(k=2, seed=0, refine_rounds=1))
    assert _released_ages(before) == {"id0": "*", "id1": "*", "id2": "99-100",
                                      "id3": "99-100", "id4": "*"}
    assert _released_ages(after) == {"id0": "10", "id1": "10", "id2": "97-128",
                                     "id3": "97-128", "id4": "97-128"}
    assert (before.metrics["ilm"], after.metrics["ilm"]) == (0.0, 0.0)
    assert before.metrics["alm"] == pytest.approx(3.03125 / 5, abs=1e-12)
    assert after.metrics["alm"] == pytest.approx(0.15, abs=1e-12)
    assert verify_lda(after.records, after.pseudonym_map, df, 2).ok


def _refine_spy(monkeypatch):
    """Run LDA's refine as it is and keep its output clusters and the loss
    it was given (framework._cluster_loss with the config's data)."""
    from anonymizers.longitudinal import framework

    seen = {}

    def spy(clusters, k, rounds, grow, from_cluster, loss):
        seen["clusters"] = framework_refine(clusters, k, rounds, grow, from_cluster, loss)
        seen["loss"] = loss
        return seen["clusters"]

    framework_refine = framework.refine
    monkeypatch.setattr(framework, "refine", spy)
    return seen


def test_cluster_loss_weighs_icd_and_age_by_their_own_weights(monkeypatch):
    """p0 = (401.1, 10), p1 = (401.9, 12) and p2 = p3 = (250.00, 70), k = 2.
    The ICD domain is the data's three codes; 401.1 and 401.9 meet at 401
    (2 of 3 leaves, LM 2/3 each), ages 10 and 12 at 9-12 (4/128 = 1/32
    each).  The cluster {p0, p1} costs, per Definition 8 times n,
    w_ICD * (2/3 + 2/3) + w_Age * (1/32 + 1/32): at w_ICD = 0.9 that is
    1.2 + 0.00625 = 1.20625, at w_ICD = 0.1 it is 0.13333 + 0.05625 =
    0.18958; {p2, p3} is released as it is, 0."""
    df = frame([[("4011", 10)], [("4019", 12)], [("25000", 70)], [("25000", 70)]])
    for w_icd, expect in ((0.9, 1.20625), (0.1, 0.2 / 1.5 + 0.05625)):
        seen = _refine_spy(monkeypatch)
        lda(df, LDAConfig(k=2, seed=0, w_icd=w_icd, w_age=1 - w_icd, refine_rounds=1))
        by_members = {tuple(sorted(c.members.tolist())): seen["loss"](c)
                      for c in seen["clusters"]}
        assert by_members == {(0, 1): pytest.approx(expect, abs=1e-12),
                              (2, 3): pytest.approx(0.0, abs=1e-12)}


@settings(max_examples=40, deadline=None)
@given(cohort, st.integers(2, 3), st.sampled_from([0.9, 0.2]), st.booleans(),
       st.integers(0, 3))
def test_refine_loss_is_the_release_loss(trajectories, k, w_icd, weighted, seed):
    """The loss refine compares, summed over the clusters, is n * (w_ICD *
    ILM + w_Age * ALM) of the release (ILM and ALM from the release's own
    metrics); with w_ICD != w_Age a swapped or ignored weight breaks it
    whenever ILM != ALM."""
    df = frame(trajectories)
    if len(trajectories) < k:
        return
    with pytest.MonkeyPatch.context() as mp:
        seen = _refine_spy(mp)
        result = released(df, LDAConfig(k=k, seed=seed, w_icd=w_icd, w_age=1 - w_icd,
                                        member_weighted=weighted, refine_rounds=1))
    if result is None:
        return
    m = result.metrics
    total = sum(seen["loss"](c) for c in seen["clusters"])
    assert total == pytest.approx(len(trajectories) * (w_icd * m["ilm"]
                                                       + (1 - w_icd) * m["alm"]), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(cohort, st.integers(2, 4), st.sampled_from([0.9, 0.5, 0.2]), st.booleans(),
       st.integers(1, 3), st.integers(0, 3))
def test_refine_never_raises_the_configured_loss(trajectories, k, w_icd, weighted, rounds,
                                                 seed):
    """Against MDAV alone (same seed): w_ICD * ILM + w_Age * ALM with the
    config's weights does not rise, every cluster keeps k..2k-1 members and
    the independent verifier accepts the refined release."""
    df = frame(trajectories)
    if len(trajectories) < k:
        return
    w = {"w_icd": w_icd, "w_age": 1 - w_icd, "member_weighted": weighted}
    before = released(df, LDAConfig(k=k, seed=seed, **w))
    after = released(df, LDAConfig(k=k, seed=seed, refine_rounds=rounds, **w))
    if before is None or after is None:
        return
    total = [w_icd * r.metrics["ilm"] + (1 - w_icd) * r.metrics["alm"] for r in (before, after)]
    assert total[1] <= total[0] + 1e-9
    assert k <= after.metrics["min_cluster_size"]
    assert after.metrics["max_cluster_size"] <= 2 * k - 1
    verdict = verify_lda(after.records, after.pseudonym_map, df, k)
    assert verdict.ok, verdict.violations
