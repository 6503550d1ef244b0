"""MDAV-based clustering of LDA (Tamersoy 2011, Section IV.3.2)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.longitudinal.clustering import Cluster, mdav, trajectory_keys


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
