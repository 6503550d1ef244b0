"""MedCo code clustering (Zoveralli, section 2): Jaccard, HAC, frequency, anonymity set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import cut_tree, fcluster, linkage
from scipy.spatial.distance import squareform

from anonymizers.dummies import ClusterConfig, cluster_codes
from anonymizers.dummies.clustering import enforce_min_anonymity, theoretical_ratio, ward_1d
from anonymizers.dummies.jaccard import correlated_groups, jaccard_matrix
from anonymizers.errors import InputError, ParameterError
from anonymizers.records import from_sets


def long(sets) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, s in enumerate(sets) for c in s]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def same_partition(a, b) -> bool:
    return len(set(zip(a, b))) == len(set(a)) == len(set(b))


def test_jaccard_by_hand():
    # a: p0 p1 p2; b: p0 p1; c: p3.  J(a,b) = 2/3, J(a,c) = J(b,c) = 0.
    rec = from_sets([{"a", "b"}, {"a", "b"}, {"a"}, {"c"}])
    d = jaccard_matrix(rec.matrix)
    assert list(rec.codes) == ["a", "b", "c"]
    np.testing.assert_allclose(d, [[0, 1 / 3, 1], [1 / 3, 0, 1], [1, 1, 0]])


def test_jaccard_matches_sets_on_random_data():
    rng = np.random.default_rng(1)
    sets = [set(rng.choice(12, size=rng.integers(1, 6), replace=False).tolist())
            for _ in range(40)]
    rec = from_sets(sets)
    d = jaccard_matrix(rec.matrix)
    holders = {c: {i for i, s in enumerate(sets) if int(c) in s} for c in rec.codes}
    for i, a in enumerate(rec.codes):
        for j, b in enumerate(rec.codes):
            expect = 1 - len(holders[a] & holders[b]) / len(holders[a] | holders[b])
            assert d[i, j] == pytest.approx(expect)


@pytest.mark.parametrize("method", ["single", "complete", "average"])
def test_groups_equal_the_full_dendrogram_cut(method):
    rng = np.random.default_rng(7)
    base = [rng.choice(15, size=rng.integers(1, 5), replace=False) for _ in range(60)]
    sets = [set(s.tolist()) | ({99} if 3 in s else set()) for s in base]  # 99 follows 3
    rec = from_sets(sets)
    for t in (0.2, 0.5, 0.8):
        full = fcluster(linkage(squareform(jaccard_matrix(rec.matrix), checks=False), method),
                        t=t + 1e-12, criterion="distance")
        assert same_partition(correlated_groups(rec.matrix, t, method), full)


def test_ward_1d_is_scipy_ward():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 25))
        v = rng.random(n) * 5000  # no tied merge costs
        k = int(rng.integers(1, n + 1))
        expect = cut_tree(linkage(v.reshape(-1, 1), "ward"), n_clusters=k).ravel()
        assert same_partition(ward_1d(v, k), expect)


def test_ward_1d_keeps_equal_values_together_and_orders_labels():
    labels = ward_1d(np.array([5.0, 1.0, 5.0, 100.0, 1.0]), 2)
    assert labels.tolist() == [0, 0, 0, 1, 0]


def test_correlated_codes_stay_together_across_frequencies():
    # x is in 20 patients, y in 10 of them (J = 0.5): one group, although a
    # frequency-only clustering would split them (section 2, after Fig. 4).
    sets = [{"x", "y"}] * 10 + [{"x"}] * 10 + [{f"r{i}"} for i in range(8)] * 2
    sets += [{f"m{i}"} for i in range(6)] * 10
    result = cluster_codes(long(sets), ClusterConfig(min_anonymity_set=2, n_clusters=3))
    home = next(c for c in result.clusters if "x" in c)
    assert "y" in home
    assert result.correlated_groups == [["x", "y"]]


def test_frequency_clusters_and_anonymity_set():
    # 4 frequent codes (40 patients each) and 12 rare ones (1-3 patients).
    sets = [{f"f{i}"} for i in range(4)] * 40 + [{f"r{i}"} for i in range(12)] * 2
    sets += [{"r0"}, {"r1"}]
    ward = {"n_clusters": 2, "frequency_step": "ward"}  # step 3 moves codes after Ward's step
    result = cluster_codes(long(sets), ClusterConfig(min_anonymity_set=3, **ward))
    assert result.clusters == [sorted(f"r{i}" for i in range(12)), ["f0", "f1", "f2", "f3"]]
    assert result.metrics["anonymity_set_met"] and result.metrics["smallest_cluster"] == 4
    result = cluster_codes(long(sets), ClusterConfig(min_anonymity_set=6, **ward))
    top = result.clusters[-1]
    assert len(top) == 6 and {"r0", "r1"} <= set(top)  # the most frequent rare codes moved up
    assert result.metrics["codes_moved_for_anonymity_set"] == 2
    # least_ratio forms the same clusters directly: nothing left to move.
    least = cluster_codes(long(sets), ClusterConfig(min_anonymity_set=6, n_clusters=2,
                                                    frequency_step="least_ratio"))
    assert least.clusters == result.clusters
    assert least.metrics["codes_moved_for_anonymity_set"] == 0


def test_every_code_in_exactly_one_cluster_and_none_smaller_than_a():
    rng = np.random.default_rng(11)
    sets = [set(rng.zipf(1.4, size=rng.integers(1, 6)).astype(str).tolist()) for _ in range(300)]
    df = long(sets)
    for a, c in [(5, None), (10, 3), (1, 4), (50, 2)]:
        clusters = cluster_codes(df, ClusterConfig(a, c)).clusters
        flat = [x for cl in clusters for x in cl]
        assert sorted(flat) == sorted(set(df["code"])) and len(flat) == len(set(flat))
        assert min(map(len, clusters)) >= a


def test_n_clusters_default_is_the_most_a_allows():
    df = long([{str(i)} for i in range(10)] * 3 + [{"0"}])
    assert cluster_codes(df, ClusterConfig(3)).metrics["n_clusters"] <= 3
    assert cluster_codes(df, ClusterConfig(3, n_clusters=99)).metrics["n_clusters"] <= 3


def test_fewer_codes_than_a_gives_one_flagged_cluster():
    result = cluster_codes(long([{"a", "b"}, {"c"}]), ClusterConfig(5, n_clusters=2))
    assert result.clusters == [["a", "b", "c"]]
    assert result.metrics["anonymity_set_met"] is False


def test_enforcement_moves_uncorrelated_codes_first_nearest_first():
    # receiver {0, 1} (frequencies 90..100) lacks one code; the donor's
    # uncorrelated codes go before its correlated pair {2, 3}, though that is nearer.
    freq = np.array([100, 90, 80, 80, 10, 9, 8, 7])
    labels = np.array([1, 1, 0, 0, 0, 0, 0, 0])
    groups = np.array([0, 1, 2, 2, 3, 4, 5, 6])
    out, moved, split = enforce_min_anonymity(labels, groups, freq, 3)
    assert out.tolist() == [1, 1, 0, 0, 1, 0, 0, 0] and (moved, split) == (1, 0)


def test_enforcement_moves_a_correlated_group_whole():
    freq = np.array([100, 90, 80, 80, 10, 10, 10, 10])
    labels = np.array([1, 1, 0, 0, 0, 0, 0, 0])
    groups = np.array([0, 1, 2, 2, 3, 3, 3, 3])
    out, moved, split = enforce_min_anonymity(labels, groups, freq, 3)
    assert out.tolist() == [1, 1, 1, 1, 0, 0, 0, 0] and (moved, split) == (2, 0)


def test_enforcement_splits_a_group_only_when_nothing_else_fits():
    freq = np.array([50, 5, 5, 5, 5])
    labels = np.array([1, 0, 0, 0, 0])
    groups = np.array([0, 1, 1, 1, 1])  # the donor is one correlated group of 4
    out, moved, split = enforce_min_anonymity(labels, groups, freq, 2)
    assert np.bincount(out).tolist() == [3, 2] and (moved, split) == (1, 1)


def test_theoretical_ratio_by_hand():
    # clusters {0,1} top 4 and {2} top 1: (2*4 + 1) / (4 + 2 + 1)
    assert theoretical_ratio(np.array([0, 0, 1]), np.array([4, 2, 1])) == pytest.approx(9 / 7)


@pytest.mark.parametrize("kwargs, field", [
    ({"min_anonymity_set": 0}, "min_anonymity_set"),
    ({"min_anonymity_set": True}, "min_anonymity_set"),
    ({"min_anonymity_set": 2, "n_clusters": 0}, "n_clusters"),
    ({"min_anonymity_set": 2, "distance_threshold": 1.5}, "distance_threshold"),
    ({"min_anonymity_set": 2, "distance_threshold": "0.5"}, "distance_threshold"),
    ({"min_anonymity_set": 2, "linkage": "ward"}, "linkage"),
])
def test_bad_parameters(kwargs, field):
    with pytest.raises(ParameterError) as err:
        ClusterConfig(**kwargs)
    assert err.value.field == field


def test_bad_input():
    with pytest.raises(InputError, match="no rows"):
        cluster_codes(pd.DataFrame({"patient_id": [], "code": []}), ClusterConfig(1))
    with pytest.raises(InputError, match="missing column"):
        cluster_codes(pd.DataFrame({"patient": ["a"], "code": ["1"]}), ClusterConfig(1))
    with pytest.raises(InputError, match="row 2"):
        cluster_codes(pd.DataFrame({"patient_id": ["a", "b"], "code": ["1", None]}),
                      ClusterConfig(1))
