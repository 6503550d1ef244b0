"""Unit tests of DISASSOCIATION: parameters, input errors, edge inputs, the
pieces (HORPART, VERPART, k^m test, refining), release I/O, the Section 7
options, reconstruction and the utility metrics."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from anonymizers.disassociation import (Cluster, Disassociated, DisassociationConfig,
                                        RecordChunk, SharedChunk, TooFewRecords,
                                        disassociate, merge_occurrences, split_occurrences)
from anonymizers.disassociation.batches import plan_batches
from anonymizers.disassociation import metrics
from anonymizers.disassociation.horpart import horpart, merge_small
from anonymizers.disassociation.kmcheck import can_add
from anonymizers.disassociation.prepare import prepare
from anonymizers.disassociation.ragged import gather
from anonymizers.disassociation import linking
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.errors import InputError, ParameterError
from anonymizers.records import from_sets
from anonymizers.verify.disassociation import verify_disassociation


def long(sets) -> pd.DataFrame:
    return pd.DataFrame([(f"p{i}", c) for i, s in enumerate(sets) for c in s],
                        columns=["patient_id", "code"])


# ---------------------------------------------------------------- parameters

@pytest.mark.parametrize("kwargs, field", [
    ({"k": 1, "m": 2}, "k"), ({"k": 2.5, "m": 2}, "k"), ({"k": True, "m": 2}, "k"),
    ({"k": 3, "m": 0}, "m"), ({"k": 3, "m": 6}, "m"),
    ({"k": 3, "m": 2, "max_cluster_size": 2}, "max_cluster_size"),
    ({"k": 3, "m": 2, "max_joint_clusters": 1}, "max_joint_clusters"),
    ({"k": 3, "m": 2, "seed": -1}, "seed"),
    ({"k": 3, "m": 2, "refine": "yes"}, "refine"),
    ({"k": 3, "m": 2, "utility_policy": "401"}, "utility_policy"),
    ({"k": 3, "m": 2, "utility_policy": [["401", "402"], ["402"]]}, "utility_policy"),
    ({"k": 3, "m": 2, "utility_policy": [["401", 5]]}, "utility_policy"),
    ({"k": 3, "m": 2, "sensitive_codes": "401"}, "sensitive_codes"),
])
def test_bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(ParameterError) as err:
        DisassociationConfig(**kwargs)
    assert err.value.field == field


def test_max_cluster_size_defaults_to_2k():
    assert DisassociationConfig(4, 2).max_cluster_size == 8


def test_config_type_is_checked():
    with pytest.raises(ParameterError):
        disassociate(long([["a"]]), {"k": 2, "m": 1})


@pytest.mark.parametrize("frame, field", [
    (pd.DataFrame({"patient": ["a"], "code": ["1"]}), "patient_id"),
    (pd.DataFrame({"patient_id": ["a", None], "code": ["1", "2"]}), "patient_id"),
    (pd.DataFrame({"patient_id": ["a", "b"], "code": ["1", None]}), "code"),
])
def test_bad_input_names_row_and_field(frame, field):
    with pytest.raises(InputError) as err:
        disassociate(frame, DisassociationConfig(2, 1))
    assert err.value.field == field


# ---------------------------------------------------------------- edge inputs

def test_empty_input_is_refused():
    empty = pd.DataFrame({"patient_id": [], "code": []})
    with pytest.raises(TooFewRecords) as err:
        disassociate(empty, DisassociationConfig(3, 2, seed=0))
    assert err.value.n_records == 0 and err.value.k == 3


@pytest.mark.parametrize("n, k", [(1, 2), (2, 3), (4, 5)])
def test_fewer_records_than_k_are_refused_not_released_empty(n, k):
    data = long([["a", "b"]] * n)
    with pytest.raises(InputError, match=f"{n} record\\(s\\), fewer than k = {k}"):
        disassociate(data, DisassociationConfig(k, 2, seed=0))
    with pytest.raises(TooFewRecords):  # the batch path refuses them too
        plan_batches([data.iloc[:1], data.iloc[1:]], DisassociationConfig(k, 2))


def test_exactly_k_records_are_released():
    data = long([["a", "b"], ["a"], ["c"]])
    result = disassociate(data, DisassociationConfig(3, 2, seed=0))
    assert result.release.n_records == 3
    assert verify_disassociation(data, result.to_json()).ok


def test_verifier_rejects_any_release_of_fewer_than_k_records():
    data = long([["a", "b"], ["a"]])
    doc = {"k": 3, "m": 2, "clusters": [{"size": 2, "record_chunks": [],
                                         "item_chunk": ["a", "b"]}], "shared_chunks": []}
    assert not verify_disassociation(data, doc).ok


def test_identical_records_stay_together_and_keep_their_codes():
    data = long([["x", "y", "z"]] * 25)
    result = disassociate(data, DisassociationConfig(3, 3, seed=1))
    assert len(result.clusters) == 1
    (chunk,) = result.clusters[0].record_chunks
    assert chunk.codes == ("x", "y", "z") and set(chunk.subrecords) == {("x", "y", "z")}
    assert verify_disassociation(data, result.to_json()).ok


def test_unusual_code_strings_survive_untouched():
    codes = ["-1", "V15.4", "E950", "10292", "ü-ß", "a b", "-9"]
    data = long([codes] * 4 + [codes[:3]] * 3)
    result = disassociate(data, DisassociationConfig(3, 2, seed=2))
    released = {c for cl in result.to_json()["clusters"] for ch in cl["record_chunks"]
                for c in ch["codes"]} | {c for cl in result.to_json()["clusters"]
                                         for c in cl["item_chunk"]}
    assert released == set(codes)
    assert verify_disassociation(data, result.to_json()).ok


# ---------------------------------------------------------------- pieces

def test_km_test_agrees_with_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(300):
        n, cols, k, m = int(rng.integers(2, 9)), int(rng.integers(0, 5)), \
            int(rng.integers(2, 4)), int(rng.integers(1, 4))
        chunk = rng.random((n, cols)) < 0.6
        t = rng.random(n) < 0.7
        full = np.column_stack([chunk, t])
        masks = [int(sum(1 << r for r in np.flatnonzero(chunk[:, j]))) for j in range(cols)]
        mask_t = int(sum(1 << r for r in np.flatnonzero(t)))
        fits = can_add(masks, mask_t, k, m)
        assert fits == _km_with(full, k, m)
        if _km(chunk, k, m):
            assert fits == _km(full, k, m)


def _km(table: np.ndarray, k: int, m: int) -> bool:
    """Every set of <= m columns held by some row is held by >= k rows."""
    for size in range(1, m + 1):
        for cols in combinations(range(table.shape[1]), size):
            s = int(table[:, list(cols)].all(axis=1).sum())
            if 0 < s < k:
                return False
    return True


def _km_with(table: np.ndarray, k: int, m: int) -> bool:
    """The same, for the sets that hold the last column only."""
    last = table.shape[1] - 1
    for size in range(0, m):
        for cols in combinations(range(last), size):
            s = int(table[:, list(cols) + [last]].all(axis=1).sum())
            if 0 < s < k:
                return False
    return True


def test_horpart_splits_on_the_most_frequent_code_first():
    # 'a' (3 records) first; then ties of support 1 go to the first code, 'b'
    prep = prepare(long([["a", "b"], ["a"], ["a", "c"], ["b"], ["c"], ["d"]]), None, (), False)
    clusters = horpart(prep.records.matrix, prep.constraint, ~prep.sensitive, 3)
    assert [sorted(prep.records.patients[c.rows]) for c in clusters] == \
        [["p0"], ["p1", "p2"], ["p3"], ["p4", "p5"]]


def test_horpart_never_splits_on_sensitive_codes():
    data = long([["s", "a"]] * 3 + [["s", "b"]] * 3 + [["s"]] * 3)
    prep = prepare(data, None, {"s"}, False)
    clusters = horpart(prep.records.matrix, prep.constraint, ~prep.sensitive, 4)
    assert all(c.n <= 3 for c in clusters)


def test_merge_small_pools_neighbours_until_k():
    m = from_sets([["a"]] * 12).matrix
    parts = [gather(m, np.arange(a, b)) for a, b in [(0, 1), (1, 2), (2, 6), (6, 7),
                                                     (7, 11), (11, 12)]]
    merged, count = merge_small(parts, 3)
    assert [p.n for p in merged] == [6, 6] and count == 4


def test_verpart_keeps_constraints_together():
    # Fig. 9, lines 15-17: 'b' fits with 'a' ({a, b} in 3 records) but its
    # constraint partner 'c' does not ({a, c} in 1), so 'b' waits for 'c'
    sets = [["a", "b"]] * 3 + [["a"]] * 2 + [["a", "c"]] + [["b", "c"]] * 3
    policy = [["a"], ["b", "c"]]
    result = disassociate(long(sets), DisassociationConfig(3, 2, max_cluster_size=20,
                                                           utility_policy=policy, seed=0))
    domains = [set(ch.codes) for ch in result.clusters[0].record_chunks]
    assert domains == [{"a"}, {"b", "c"}]
    without = disassociate(long(sets), DisassociationConfig(3, 2, max_cluster_size=20, seed=0))
    assert [set(ch.codes) for ch in without.clusters[0].record_chunks][0] == {"a", "b"}


def test_chunk_order_says_nothing_about_records():
    """Subrecords are sorted: the order depends neither on the seed (which is
    recorded and could replay a shuffle) nor on the order of the records."""
    sets = [["a", "b", "c"], ["a"], ["b", "c"], ["a", "c"], ["b"], ["a", "b"]] * 2
    cfg = dict(k=3, m=2, max_cluster_size=13)
    one = disassociate(long(sets), DisassociationConfig(**cfg, seed=4)).to_json()
    assert all(disassociate(long(sets), DisassociationConfig(**cfg, seed=s)).to_json() == one
               for s in range(5))
    reordered = long(sets[::-1]).assign(patient_id=lambda d: "q" + d["patient_id"])
    assert disassociate(reordered, DisassociationConfig(**cfg)).to_json() == one
    for cluster in one["clusters"]:
        for chunk in cluster["record_chunks"]:
            assert chunk["subrecords"] == sorted(chunk["subrecords"])


def test_refining_moves_shared_item_codes_and_keeps_the_guarantee():
    # two clusters around 'a' and 'b', each holding 'z' twice: 2 + 2 >= k
    sets = ([["a", "z"]] * 2 + [["a"]] * 2) + ([["b", "z"]] * 2 + [["b"]] * 2)
    data = long(sets)
    plain = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=5, seed=0,
                                                    refine=False))
    refined = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=5, seed=0))
    assert all("z" in c.item_chunk for c in plain.clusters)
    assert [s.codes for s in refined.shared_chunks] == [("z",)]
    assert all("z" not in c.item_chunk for c in refined.clusters)
    assert refined.metrics["codes_with_exact_support"] > plain.metrics["codes_with_exact_support"]
    assert verify_disassociation(data, refined.to_json()).ok


def test_refining_joins_only_clusters_whose_item_codes_hide_counts():
    # A and B each hold 'z' on two records (a count "one" cannot give); the
    # item codes of C are on one record each: joining C would reveal no count
    sets = ([["a", "z"]] * 2 + [["a"]] * 2) + ([["b", "z"]] * 2 + [["b"]] * 2) + \
        [["c", f"w{i}"] for i in range(4)]
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=5, seed=0))
    a, b, c = result.clusters
    assert [s.codes for s in result.shared_chunks] == [("z",)]
    assert result.shared_chunks[0].clusters == (0, 1)
    assert result.metrics["n_joint_clusters"] == 1
    assert c.item_chunk == ("w0", "w1", "w2", "w3")
    assert verify_disassociation(data, result.to_json()).ok
    drawn = reconstruct(result.release, seed=3)
    assert metrics.are(data, drawn, [(x,) for x in data["code"].unique()]) == 0.0


def test_a_code_in_a_record_chunk_blocks_its_joint_cluster():
    # 'z' fills a record chunk of the first cluster: the clusters holding it in
    # their item chunks join each other, not that one
    sets = ([["a", "z"]] * 3 + [["a"]] * 5) + ([["b", "z"]] * 2 + [["b"]] * 6) + \
        ([["c", "z"]] * 2 + [["c"]] * 6)
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=9, seed=0))
    assert [ch.codes for ch in result.clusters[0].record_chunks] == [("a", "z")]
    (shared,) = result.shared_chunks
    assert shared.codes == ("z",) and shared.clusters == (1, 2)
    assert verify_disassociation(data, result.to_json()).ok


def test_max_joint_clusters_bounds_joint_clusters():
    # one cluster per letter (policy-led splits), 'z' twice in each: 2 + 2 >= k
    sets = [s for c in "abcdefgh" for s in ([c, "z"], [c, "z"], [c], [c])]
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=5, seed=0,
                                                     utility_policy=[[c] for c in "abcdefgh"],
                                                     max_joint_clusters=2))
    assert len(result.clusters) == 8
    assert result.shared_chunks
    assert all(len(s.clusters) <= 2 for s in result.shared_chunks)
    assert verify_disassociation(data, result.to_json()).ok


# ---------------------------------------------------------------- release I/O

def example():
    sets = [["a", "b"], ["a", "b", "c"], ["a"], ["b", "c"], ["a", "b"], ["c", "d"]] * 2
    return long(sets), disassociate(long(sets), DisassociationConfig(3, 2, seed=3))


def test_json_round_trip():
    _, result = example()
    doc = result.to_json()
    assert Disassociated.from_json(doc).to_json() == doc


@pytest.mark.parametrize("mutate", [
    lambda d: d.pop("clusters"),
    lambda d: d.update(k="3"),
    lambda d: d["clusters"][0].update(size=0),
    lambda d: d["clusters"][0]["record_chunks"][0]["subrecords"].pop(),
    lambda d: d["clusters"][0]["record_chunks"][0]["subrecords"][0].append("zz"),
    lambda d: d["clusters"][0].update(item_chunk=[1]),
    lambda d: d.update(shared_chunks=[{"clusters": [9], "codes": [], "subrecords": []}]),
])
def test_from_json_rejects_malformed_releases(mutate):
    _, result = example()
    doc = result.to_json()
    mutate(doc)
    with pytest.raises(InputError):
        Disassociated.from_json(doc)


def test_tables_flatten_the_release():
    _, result = example()
    tables = result.tables()
    assert set(tables) == {"clusters", "record_chunks", "item_chunks", "shared_chunks",
                           "shared_chunk_clusters"}
    assert tables["clusters"]["size"].sum() == 12
    n_codes = sum(len(s) for c in result.clusters for ch in c.record_chunks
                  for s in ch.subrecords)
    assert len(tables["record_chunks"]) == n_codes
    assert list(tables["record_chunks"].columns) == ["cluster_id", "chunk_id", "subrecord_id",
                                                     "code"]


# ---------------------------------------------------------------- Section 7

def test_repeated_codes_become_distinct_items():
    data = pd.DataFrame({"patient_id": ["a", "a", "a", "b"],
                         "code": ["250", "250", "401", "250"]})
    split = split_occurrences(data)
    assert split["code"].tolist() == ["250#1", "250#2", "401#1", "250#1"]
    assert merge_occurrences(split["code"]).tolist() == ["250", "250", "401", "250"]


def test_repeated_codes_option_keeps_the_guarantee_on_multisets():
    sets = [["250", "250", "401"], ["250", "250"], ["250", "401"], ["250", "250", "250"]] * 2
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, seed=1, repeated_codes=True,
                                                     utility_policy=[["250"]]))
    codes = {c for cl in result.to_json()["clusters"] for ch in cl["record_chunks"]
             for c in ch["codes"]} | {c for cl in result.clusters for c in cl.item_chunk}
    assert codes == {"250#1", "250#2", "250#3", "401#1"}
    assert verify_disassociation(data, result.to_json(), repeated_codes=True).ok
    assert not verify_disassociation(data, result.to_json()).ok


def test_sensitive_codes_stay_in_item_chunks():
    sets = [["a", "hiv"]] * 6 + [["b", "hiv"]] * 3 + [["a", "b"]] * 3
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, seed=0, sensitive_codes={"hiv"}))
    for cluster in result.clusters:
        assert all("hiv" not in ch.codes for ch in cluster.record_chunks)
    assert all("hiv" not in s.codes for s in result.shared_chunks)
    assert verify_disassociation(data, result.to_json(), sensitive_codes={"hiv"}).ok
    plain = disassociate(data, DisassociationConfig(3, 2, seed=0))
    assert not verify_disassociation(data, plain.to_json(), sensitive_codes={"hiv"}).ok


# ---------------------------------------------------------------- reconstruction

@pytest.mark.parametrize("mode", ["one", "below_k", "cluster"])
def test_reconstruction_respects_the_release(mode):
    data, result = example()
    drawn = reconstruct(result.release, seed=9, item_support=mode)
    assert drawn["patient_id"].nunique() <= 12
    counts = drawn["code"].value_counts()
    for cluster in result.clusters:
        for code in cluster.item_chunk:
            assert counts[code] >= 1
    exact = {c for cl in result.clusters for ch in cl.record_chunks for c in ch.codes} - \
        {c for cl in result.clusters for c in cl.item_chunk}
    original = data["code"].value_counts()
    for code in exact:
        assert counts[code] == original[code]


def test_reconstruction_item_support_modes():
    data = long([["a", "x"]] + [["a"]] * 5)
    release = disassociate(data, DisassociationConfig(3, 1, seed=0)).release
    assert release.clusters[0].item_chunk == ("x",)
    draws = {mode: [reconstruct(release, seed=s, item_support=mode)["code"].tolist()
                    .count("x") for s in range(40)] for mode in ("cluster", "below_k", "one")}
    assert set(draws["one"]) == {1}
    assert set(draws["below_k"]) == {1, 2}  # drawn in 1..k-1, not always k-1
    assert max(draws["cluster"]) > 2 and min(draws["cluster"]) < 6
    with pytest.raises(ParameterError):
        reconstruct(release, seed=0, item_support="all")


def test_default_reconstruction_puts_item_codes_on_one_record_and_says_so():
    # every item-chunk code of these clusters is on one record: the default
    # rule gets every count right, the drawn rules over-count some of them
    sets = [["a", f"x{i}"] for i in range(6)] + [["b", f"y{i}"] for i in range(6)]
    data = long(sets)
    release = disassociate(data, DisassociationConfig(3, 2, seed=0)).release
    assert all(len(c.item_chunk) == 6 for c in release.clusters)
    drawn = reconstruct(release, seed=1)
    assert drawn.attrs["item_support"] == "one"
    assert metrics.are(data, drawn, [(c,) for c in data["code"].unique()]) == 0.0
    worse = [metrics.are(data, reconstruct(release, seed=s, item_support="cluster"),
                         [(c,) for c in data["code"].unique()]) for s in range(5)]
    assert min(worse) > 0


def test_reconstruction_is_seeded():
    _, result = example()
    one = reconstruct(result.release, seed=5)
    assert one.equals(reconstruct(result.release, seed=5))


# ---------------------------------------------------------------- metrics

def test_count_and_matches():
    data = long([["a", "b"], ["a"], ["b", "c"]])
    assert metrics.count(data, [("a",), ("a", "b"), ("d",), ("b", "c", "a")]).tolist() == \
        [2, 1, 0, 0]
    assert metrics.matches(data, [["a", "c"], ["d"]]).tolist() == [3, 0]


def test_are_needs_queries_that_match():
    data = long([["a"], ["b"]])
    with pytest.raises(ParameterError):
        metrics.are(data, data, [("a", "b")])
    assert metrics.are(data, data, [("a",), ("b",)]) == 0.0


def test_mre_histogram_bins_and_share():
    values = np.array([-0.3, -0.07, -0.03, -0.01, 0.0, 0.01, 0.03, 0.07, 0.2, np.nan])
    hist = metrics.mre_histogram(values)
    assert hist["count"].tolist() == [1, 1, 1, 2, 1, 1, 1, 1]
    assert hist["share"].sum() == pytest.approx(1.0)
    assert metrics.share_within(values) == pytest.approx(5 / 9)
    assert metrics.share_within([]) is None and metrics.share_within([np.nan]) is None


def test_workloads():
    rng = np.random.default_rng(0)
    data = long([["a", "b", "c"], ["a", "b"], ["a", "c"], ["b", "d"]] * 10)
    w2 = metrics.w2_workload(data, rng, n_queries=50, sizes=(1, 2))
    assert len(w2) == 50 and all(len(q) in (1, 2) for q in w2)
    assert (metrics.count(data, w2) > 0).all()
    w1 = metrics.w1_workload(data, rng, n_chains=20, max_size=3, min_support_percent=20)
    assert set(w1) <= {1, 2, 3} and w1[1]
    for size, queries in w1.items():
        assert all(len(q) == size for q in queries)
        assert (metrics.count(data, queries) >= 8).all()
    assert Counter(len(q) for q in metrics.occurring_sets(data, 2)) == Counter({2: 4})


def _learned_and_unlinked(hidden_in_item_chunk: bool) -> Disassociated:
    """Cluster 0 shows 'a' and 'z' together twice in a record chunk; cluster
    1 holds 'a' on two of four records, and 'z' either in its item chunk or
    in a shared chunk with cluster 2 (which holds 'c')."""
    learn = Cluster(4, (RecordChunk(("a", "z"), (("a", "z"), ("a", "z"), (), ())),), ())
    if hidden_in_item_chunk:
        one = Cluster(4, (RecordChunk(("a", "c"), (("a",), ("a",), ("c",), ("c",))),), ("z",))
        return Disassociated(2, 2, (learn, one))
    one = Cluster(4, (RecordChunk(("a",), (("a",), ("a",), (), ())),), ())
    two = Cluster(4, (RecordChunk(("c",), (("c",), ("c",), (), ())),), ())
    shared = SharedChunk((1, 2), ("z",), (("z",), ("z",)) + ((),) * 6)
    return Disassociated(2, 2, (learn, one, two), (shared,))


@pytest.mark.parametrize("in_item_chunk", [True, False])
def test_association_linking_puts_codes_the_release_shows_together(in_item_chunk):
    """Association linking places 'z' with 'a', as the release's own record
    chunk shows them (linking module, the default); random linking does not
    always."""
    release = _learned_and_unlinked(in_item_chunk)
    both = 3 if in_item_chunk else 4
    linked = [metrics.count(reconstruct(release, seed=s, linking="association"),
                            [("a", "z")])[0] for s in range(20)]
    assert linked == [both] * 20
    drawn = [metrics.count(reconstruct(release, seed=s, linking="random"), [("a", "z")])[0]
             for s in range(20)]
    assert min(drawn) < both
    assert reconstruct(release, seed=0).attrs["linking"] == "association"
    assert [metrics.count(reconstruct(release, seed=s), [("a", "z")])[0]
            for s in range(20)] == linked
    with pytest.raises(ParameterError):
        reconstruct(release, seed=0, linking="best")


def test_association_is_read_from_the_chunks_only():
    """observed 2 subrecords with both codes, expected 2 * 2 / 4 = 1 within
    the chunk: log(3 / 2); pairs never in one chunk get nothing."""
    release = _learned_and_unlinked(True)
    vocab = linking.vocabulary(release)
    assoc = linking.association(release, vocab).toarray()
    assert assoc[vocab["a"], vocab["z"]] == pytest.approx(np.log(3 / 2))
    assert assoc[vocab["c"], vocab["z"]] == 0 and assoc[vocab["a"], vocab["a"]] == 0


def test_refining_leaves_codes_on_one_record_of_each_cluster():
    """'z' is on two records of each cluster (refining reveals its count);
    'y' is on one record of each (3 >= k, but its count is exact without
    refining): 'y' stays in the item chunks (refine module's reading)."""
    sets = [s for c in "abc" for s in ([c, "z"], [c, "z", "y"], [c], [c])]
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=5, seed=0,
                                                     utility_policy=[[c] for c in "abc"]))
    assert len(result.clusters) == 3
    assert [s.codes for s in result.shared_chunks] == [("z",)]
    assert all(c.item_chunk == ("y",) for c in result.clusters)
    assert verify_disassociation(data, result.to_json()).ok
    drawn = reconstruct(result.release, seed=0)
    assert list(metrics.count(data, [("y",), ("z",)])) == \
        list(metrics.count(drawn, [("y",), ("z",)]))


def test_assignment_ties_weigh_records_by_the_codes_they_hold():
    """No association known: a subrecord of 3 codes goes to the record
    holding 9 codes (weight 10^3 against 1) nearly always, one of 0 codes
    uniformly; an association step still outweighs any holding."""
    held = np.array([0, 0, 9])
    zeros = np.zeros((3, 1))
    picks = [linking.best_assignment(zeros, np.random.default_rng(s), held, np.array([3]))[0]
             for s in range(200)]
    assert Counter(picks)[2] >= 195
    picks = [linking.best_assignment(zeros, np.random.default_rng(s), np.zeros(3, dtype=int),
                                     np.array([3]))[0] for s in range(300)]
    assert min(Counter(picks).values()) >= 70
    scored = np.array([[np.log(3 / 2)], [0.0], [0.0]])
    assert all(linking.best_assignment(scored, np.random.default_rng(s), held,
                                       np.array([3]))[0] == 0 for s in range(50))
