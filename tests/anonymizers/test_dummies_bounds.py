"""Lower bounds on MedCo's real ratio (``bounds.py``) and section 4's merging (``merge.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.dummies import (ClusterConfig, DummyConfig, DummyGenerationError, NoReleaseError,
                                 cluster_codes, generate_dummies)
from anonymizers.dummies.bounds import any_profile_bound, profile_relaxation
from anonymizers.dummies.merge import merge_overflowing, overflow_runs
from anonymizers.errors import ParameterError
from anonymizers.records import encode
from anonymizers.verify.dummies import verify_clusters, verify_dummies


def long(sets) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, s in enumerate(sets) for c in s]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def labels_of(records, clusters) -> np.ndarray:
    where = {c: j for j, cl in enumerate(clusters) for c in cl}
    return np.array([where[c] for c in records.codes])


SPAN = [{"a", "c", "d"}] * 10 + [{"b", "c", "d"}] + [{"g", "h"}] * 11


def test_any_profile_bound_by_hand():
    # cluster {0,1}: top 4, code 1 needs 4-1-1 = 2; cluster {2}: nothing; occ 7
    freq, labels = np.array([4, 1, 2]), np.array([0, 0, 1])
    assert any_profile_bound(freq, labels) == pytest.approx(1 + 2 / 7)
    assert any_profile_bound(freq, labels, duplicates=True) == pytest.approx(2.0)


def test_profile_bound_by_hand():
    # clusters {a, b} (10, 1) and {c, d, g, h} (11 each); every patient
    # holding a code of the first also holds two of the second, so raising b
    # by 8 (to 10 - 1) adds 16 to the second cluster.
    rec = encode(long(SPAN))
    rel = profile_relaxation(rec.matrix, labels_of(rec, [["a", "b"], ["c", "d", "g", "h"]]))
    occ = 3 * 11 + 2 * 11
    assert rel.ratio == pytest.approx(1 + 8 * 3 / occ)  # 8 dummies of 3 codes
    assert rel.levels.tolist() == pytest.approx([10, (44 + 16) / 4])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcdefgh"), min_size=1, max_size=4),
                min_size=3, max_size=14), st.integers(1, 3), st.integers(0, 50))
def test_no_release_beats_the_bounds(sets, n_clusters, seed):
    df = long(sets)
    clusters = cluster_codes(df, ClusterConfig(2, n_clusters=n_clusters)).clusters
    try:
        result = generate_dummies(df, clusters, DummyConfig(seed=seed))
    except (NoReleaseError, DummyGenerationError):
        return
    rec = encode(df)
    labels = labels_of(rec, clusters)
    m = result.metrics
    real = m["real_ratio"]
    assert any_profile_bound(rec.support(), labels) <= real + 1e-9
    assert profile_relaxation(rec.matrix, labels).ratio <= real + 1e-6
    assert m["ratio_bound_profiles"] == pytest.approx(profile_relaxation(rec.matrix, labels).ratio)
    assert m["ratio_bound_any_profile"] <= m["ratio_bound_profiles"] + 1e-6
    assert m["ratio_bound_profiles"] <= m["ratio_bound_profiles_duplicated"] + 1e-6
    if result.metrics["real_patients_without_dummy"] == 0:
        assert profile_relaxation(rec.matrix, labels, duplicates=True).ratio <= real + 1e-6


def test_overflow_runs_by_hand():
    tops = np.array([10, 20, 30])
    assert overflow_runs(tops, np.array([25.0, 20, 30])).tolist() == [0, 0, 1]
    assert overflow_runs(tops, np.array([10.0, 31, 30])).tolist() == [0, 1, 1]
    assert overflow_runs(tops, np.array([31.0, 20, 30])).tolist() == [0, 0, 0]
    assert overflow_runs(tops, np.array([20.0, 30, 30])).tolist() == [0, 1, 2]  # reaching is not passing


def test_merging_the_clusters_that_overflow():
    # as in test_profile_bound_by_hand, with a third cluster {e, f} above:
    # filling {a, b} lifts {c, d, g, h} to 15 > 12, the top of {e, f}: they
    # merge; {a, b} ends at its top 10, below 11, and stays apart.
    rec = encode(long(SPAN + [{"e", "f"}] * 12))
    labels, merges = merge_overflowing(rec.matrix, labels_of(
        rec, [["a", "b"], ["c", "d", "g", "h"], ["e", "f"]]))
    code = {c: i for i, c in enumerate(rec.codes)}
    assert merges == 1 and labels[code["c"]] == labels[code["e"]] != labels[code["a"]]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=5),
                min_size=3, max_size=20), st.integers(1, 3))
def test_merged_clusters_are_unions_that_no_longer_overflow(sets, a):
    df = long(sets)
    plain = cluster_codes(df, ClusterConfig(a))
    merged = cluster_codes(df, ClusterConfig(a, merge_overflowing=True))
    assert verify_clusters(df, merged.clusters, a).ok
    home = {c: i for i, cl in enumerate(merged.clusters) for c in cl}
    assert all(len({home[c] for c in cl}) == 1 for cl in plain.clusters)
    assert (len(plain.clusters) - len(merged.clusters)
            == merged.metrics["clusters_merged_section4"])
    assert merged.metrics["theoretical_ratio"] >= plain.metrics["theoretical_ratio"] - 1e-12
    rec = encode(df)
    labels = labels_of(rec, merged.clusters)
    rel = profile_relaxation(rec.matrix, labels, duplicates=True)
    if np.isfinite(rel.ratio) and len(merged.clusters) > 1:
        assert len(set(overflow_runs(rel.tops, rel.levels))) == len(merged.clusters)


def test_a_merged_release_verifies():
    rng = np.random.default_rng(3)
    sets = [set(rng.zipf(1.5, size=rng.integers(1, 6)).astype(str).tolist()) for _ in range(200)]
    df = long(sets)
    clusters = cluster_codes(df, ClusterConfig(4, merge_overflowing=True)).clusters
    result = generate_dummies(df, clusters, DummyConfig(seed=1))
    assert verify_dummies(df, result.released, result.dummy_map, clusters, 4).ok


def test_merge_flag_must_be_a_bool():
    with pytest.raises(ParameterError) as err:
        ClusterConfig(2, merge_overflowing="yes")
    assert err.value.field == "merge_overflowing"


def test_any_profile_bound_is_a_plain_float():
    """The bound goes into JSON metrics (the audit row, xcom): a numpy scalar
    showed as np.float64(...) in the task log."""
    value = any_profile_bound(np.array([5, 3, 1]), np.array([0, 0, 1]))
    assert type(value) is float and value == pytest.approx(1 + 1 / 9)
