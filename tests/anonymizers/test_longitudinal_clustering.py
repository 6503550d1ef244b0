"""MDAV-based clustering of LDA (Tamersoy 2011, Section IV.3.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.longitudinal.alignment import Aligned, Pairs
from anonymizers.longitudinal.clustering import (
    Cluster,
    lookahead,
    mdav,
    trajectory_keys,
)


def line_distance(points):
    points = np.asarray(points, dtype=float)
    return lambda t, cands: np.abs(points[cands] - points[t])


def nearest(distance):
    """Grow a cluster with the m candidates nearest to r (a plain MDAV step)."""
    def grow(r, cands, m):
        order = np.argsort(distance(r, cands), kind="stable")[:m]
        return Cluster(np.concatenate([[r], cands[order]]), None, [], 0.0, 0.0)
    return grow


def run_mdav(points, k, keys, seed):
    d = line_distance(points)
    return [c.members for c in mdav(len(points), k, d, keys, np.random.default_rng(seed),
                                    nearest(d))]


def test_two_groups_on_a_line():
    points = [0, 11, 1, 10, 2, 12]
    for seed in range(5):
        clusters = run_mdav(points, 3, np.arange(6), seed)
        assert sorted(sorted(np.asarray(points)[c].tolist()) for c in clusters) == [[0, 1, 2],
                                                                                   [10, 11, 12]]


def test_cluster_starts_at_the_point_farthest_from_the_most_frequent():
    points = [5, 5, 5, 0, 1, 9]  # the mode is 5 (three copies); farthest is 0
    clusters = run_mdav(points, 2, np.array([0, 0, 0, 1, 2, 3]), 0)
    assert clusters[0].tolist() == [3, 4]


@given(st.lists(st.integers(0, 30), min_size=1, max_size=40), st.integers(1, 6),
       st.integers(0, 5))
def test_partition_into_clusters_of_k_to_2k_minus_1(points, k, seed):
    if len(points) < k:
        return
    keys = np.unique(points, return_inverse=True)[1]
    clusters = run_mdav(points, k, keys, seed)
    members = np.concatenate(clusters)
    assert sorted(members.tolist()) == list(range(len(points)))
    assert all(k <= len(c) <= max(k, 2 * k - 1) for c in clusters)


def test_identical_trajectories_share_a_key():
    icd = np.array([1, 2, 1, 2, 2, 1])
    age = np.array([5, 6, 5, 6, 6, 5])
    assert trajectory_keys(icd, age, np.array([0, 2, 4, 5, 6])).tolist() == [0, 0, 1, 2]


def test_a_given_first_member_replaces_mdav_s_farthest():
    d = line_distance([0, 1, 2, 10, 11, 12])
    firsts = []

    def first(remaining):
        firsts.append(list(remaining))
        return remaining[-1]
    clusters = mdav(6, 3, d, np.zeros(6, dtype=np.int64), np.random.default_rng(0),
                    nearest(d), first)
    assert [c.members[0] for c in clusters] == [5, 2]
    assert firsts == [[0, 1, 2, 3, 4, 5], [0, 1, 2]]


def _one_pair(t: int) -> Pairs:
    return Pairs(np.array([t]), np.array([t]), np.zeros(1, bool), np.zeros(1, bool))


def _keep_candidate(x, y, ilm, alm, members):
    """An 'alignment' whose X is the candidate's one pair: the score sees who joined."""
    return Aligned(y, 0.0, 0.0, np.array([[0, 0]]))


def test_the_lookahead_adds_the_best_scoring_of_its_shortlist():
    # costs rank candidates 1 < 2 < 3 < 4; scores: 3 best, 4 better still but
    # outside a shortlist of three; 1 and 2 tie below 3
    cost = {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4}
    score = {0: 0.0, 1: 1.0, 2: 1.0, 3: 2.0, 4: 9.0}
    grow = lookahead(_one_pair, _keep_candidate,
                     lambda x, cands, m: np.array([cost[int(c)] for c in cands]),
                     lambda x: score[int(x.icd[0])], shortlist=3)
    assert grow(0, np.array([1, 2, 3, 4]), 1).members.tolist() == [0, 3]
    score[3] = 0.5  # now 1 and 2 tie at the best: the cheaper, 1
    assert grow(0, np.array([1, 2, 3, 4]), 1).members.tolist() == [0, 1]
    assert grow(0, np.array([4]), 1).members.tolist() == [0, 4]
    # two steps: once 3 is taken, 4 enters the shortlist and wins
    score[3] = 2.0
    assert grow(0, np.array([1, 2, 3, 4]), 2).members.tolist() == [0, 3, 4]


def test_the_lookahead_counts_its_trials_and_needs_a_shortlist():
    trials = []

    def trial(*args):
        trials.append(1)
        return _keep_candidate(*args)
    grow = lookahead(_one_pair, _keep_candidate, lambda x, cands, m: np.zeros(len(cands)),
                     lambda x: 0.0, shortlist=2, trial=trial)
    grow(0, np.array([1, 2, 3]), 2)
    assert len(trials) == 4  # two per step; the last candidate left is not tried
    with pytest.raises(ValueError, match="shortlist"):
        lookahead(_one_pair, _keep_candidate, lambda x, c, m: np.zeros(len(c)),
                  lambda x: 0.0, shortlist=0)
