"""MedCo step 2 read as the least-ratio frequency clustering (frequency_step="least_ratio";
docs/methods/medco.md#dummies-clustering): the dynamic programme against brute force, and
the release it leads to against MedCo's verifier."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.dummies import (ClusterConfig, DummyConfig, NoReleaseError, cluster_codes,
                                 generate_dummies)
from anonymizers.dummies.bounds import cluster_needs
from anonymizers.dummies.clustering import least_ratio_runs
from anonymizers.dummies.inputs import encode_input
from anonymizers.dummies.jaccard import correlated_groups
from anonymizers.verify.dummies import verify_clusters, verify_dummies


@st.composite
def units(draw):
    """Codes' frequencies and their correlated groups (labels 0..U-1, all used)."""
    n_units = draw(st.integers(1, 7))
    groups = np.array(list(range(n_units)) + draw(st.lists(st.integers(0, n_units - 1),
                                                           max_size=6)))
    freq = np.array(draw(st.lists(st.integers(1, 30), min_size=len(groups),
                                  max_size=len(groups))))
    return groups, freq


def added(labels, freq) -> int:
    return int(cluster_needs(freq, np.unique(labels, return_inverse=True)[1])[1].sum())


def brute_force(groups, freq, a, n_clusters):
    """Least added occurrences over contiguous runs of the units sorted by
    top frequency (ties by unit id), each run of at least ``a`` codes, with
    the most runs up to ``n_clusters`` that some partition allows."""
    n_units = int(groups.max()) + 1
    top = np.array([freq[groups == u].max() for u in range(n_units)])
    size = np.bincount(groups)
    order = np.lexsort((np.arange(n_units), top))
    for k in range(min(n_clusters, n_units), 0, -1):
        costs = []
        for cuts in combinations(range(1, n_units), k - 1):
            edges = [0, *cuts, n_units]
            runs = [order[lo:hi] for lo, hi in zip(edges, edges[1:])]
            if min(size[r].sum() for r in runs) < a:
                continue
            run_of = np.empty(n_units, dtype=int)
            for i, r in enumerate(runs):
                run_of[r] = i
            costs.append(added(run_of[groups], freq))
        if costs:
            return k, min(costs)
    return None


@given(units(), st.integers(1, 8), st.integers(1, 4))
def test_least_ratio_is_the_brute_force_minimum(data, a, n_clusters):
    groups, freq = data
    labels = least_ratio_runs(groups, freq, a, n_clusters)
    for g in np.unique(groups):  # correlated groups are never split
        assert len(set(labels[groups == g])) == 1
    expected = brute_force(groups, freq, a, n_clusters)
    if expected is None:  # fewer than a codes: one cluster
        assert len(freq) < a and set(labels) == {0}
        return
    k, least = expected
    assert len(set(labels)) == k and added(labels, freq) == least
    assert np.bincount(labels).min() >= a
    if n_clusters * a <= len(freq) and len(set(groups)) == len(freq):
        assert k == n_clusters  # single codes: exactly n_clusters whenever n_clusters*A fit


def test_least_ratio_by_hand():
    # Frequencies 1,1,2,9,10 and A = 2: {1,1,2}{9,10} needs nothing (each code
    # within 1 of its top); {1,1}{2,9,10} would need 7 to raise 2 to 9.
    freq = np.array([1, 1, 2, 9, 10])
    labels = least_ratio_runs(np.arange(5), freq, 2, 2)
    assert labels.tolist() == [0, 0, 0, 1, 1] and added(labels, freq) == 0
    # A correlated pair {2, 10} is one unit of top 10: it goes with 9 (cost 7,
    # against 21 for {1,1,9}{2,10}).
    labels = least_ratio_runs(np.array([0, 1, 2, 3, 2]), freq, 2, 2)
    assert labels.tolist() == [0, 0, 1, 1, 1] and added(labels, freq) == 7


def long(sets) -> pd.DataFrame:
    rows = [(f"id{i}", c) for i, s in enumerate(sets) for c in s]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


patients = st.lists(st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=4),
                    min_size=1, max_size=30)


@given(patients, st.integers(1, 5), st.sampled_from([None, 1, 2, 3]), st.integers(0, 2 ** 16))
def test_release_on_least_ratio_clusters_verifies(sets, a, n_clusters, seed):
    df = long(sets)
    config = ClusterConfig(a, n_clusters, frequency_step="least_ratio")
    result = cluster_codes(df, config)
    clusters = result.clusters
    assert verify_clusters(df, clusters, a if len(set(df["code"])) >= a else None).ok
    where = {c: i for i, cl in enumerate(clusters) for c in cl}
    for group in result.correlated_groups:
        assert len({where[c] for c in group}) == 1
    assert result.metrics["codes_moved_for_anonymity_set"] == 0
    try:
        release = generate_dummies(df, clusters, DummyConfig(seed=seed))
    except NoReleaseError as err:
        assert "no release exists" in str(err)
        return
    verdict = verify_dummies(df, release.released, release.dummy_map, clusters, a)
    assert verdict.ok, verdict.violations


def test_on_grouped_codes_cluster_codes_uses_the_groups():
    sets = [{"x", "y"}] * 10 + [{"x"}] * 10 + [{f"r{i}"} for i in range(8)] * 2
    sets += [{f"m{i}"} for i in range(6)] * 10
    df = long(sets)
    records = encode_input(df)
    groups = correlated_groups(records.matrix, 0.5, "complete")
    labels = least_ratio_runs(groups, records.support(), 2, 3)
    result = cluster_codes(df, ClusterConfig(2, 3, frequency_step="least_ratio"))
    by_code = dict(zip(records.codes, labels))
    assert sorted(sorted(c) for c in result.clusters) == sorted(
        sorted(str(c) for c in records.codes[labels == j]) for j in set(labels))
    assert by_code["x"] == by_code["y"]
