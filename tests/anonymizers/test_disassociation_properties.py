"""DISASSOCIATION against its verifier on random data (hypothesis), the
verifier's arithmetic against a brute force over the JSON, and mutations of
correct releases that the verifier must catch."""

from __future__ import annotations

import copy
import math
from collections import Counter
from itertools import combinations
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from anonymizers.disassociation import DisassociationConfig, TooFewRecords, disassociate
from anonymizers.disassociation import linking as lk
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.verify.disassociation import _Release, _Tables, verify_disassociation
from test_disassociation_example import FIG1 as EXAMPLE, FIG3B  # Section 5 data

CODES = ["-1", "-9", "V15.4", "E950", "10292", "401", "250.01", "ü", "a b", "x", "y", "z",
         "296.00", "834.0"]

records_st = st.lists(st.lists(st.sampled_from(CODES), min_size=1, max_size=8),
                      min_size=0, max_size=30)


def long(sets) -> pd.DataFrame:
    return pd.DataFrame([(f"p{i}", c) for i, s in enumerate(sets) for c in s],
                        columns=["patient_id", "code"])


@st.composite
def cases(draw):
    sets = draw(records_st)
    if draw(st.booleans()) and sets:  # identical records
        sets = sets + [sets[0]] * draw(st.integers(1, 6))
    k = draw(st.integers(2, 5))
    m = draw(st.integers(1, 3))
    codes = draw(st.permutations(CODES))
    cut = draw(st.lists(st.integers(1, len(CODES)), max_size=4, unique=True))
    bounds = [0] + sorted(cut) + [len(CODES)]
    policy = [codes[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    cfg = DisassociationConfig(
        k, m, max_cluster_size=draw(st.integers(k, 3 * k)),
        utility_policy=policy if draw(st.booleans()) else None,
        refine=draw(st.booleans()),
        max_joint_clusters=draw(st.sampled_from([None, 2, 3])),
        refine_window=draw(st.sampled_from([None, 1, 2, 4])),
        seed=draw(st.integers(0, 2**16)))
    return sets, cfg


@given(cases())
def test_release_always_passes_the_verifier(case):
    sets, cfg = case
    data = long(sets)
    if len(sets) < cfg.k:  # no release can keep the guarantee: refused, never empty
        with pytest.raises(TooFewRecords):
            disassociate(data, cfg)
        return
    result = disassociate(data, cfg)
    verdict = verify_disassociation(data, result.to_json())
    assert verdict.ok, verdict.violations
    assert sum(c.size for c in result.clusters) == len(sets)
    assert all(c.size >= cfg.k for c in result.clusters)


@given(records_st, st.integers(2, 4), st.sampled_from(["hiv", "x"]))
def test_options_of_section7_pass_the_verifier(sets, k, sensitive):
    data = long(sets)
    cfg = DisassociationConfig(k, 2, seed=1, repeated_codes=True, sensitive_codes={sensitive})
    if len(sets) < k:
        with pytest.raises(TooFewRecords):
            disassociate(data, cfg)
        return
    result = disassociate(data, cfg)
    verdict = verify_disassociation(data, result.to_json(), sensitive_codes={sensitive},
                                    repeated_codes=True)
    assert verdict.ok, verdict.violations


def test_one_record_is_refused():
    data = long([["401", "250.01"]])
    for k in (2, 3):
        with pytest.raises(TooFewRecords, match="1 record"):
            disassociate(data, DisassociationConfig(k, 2, seed=0))


def test_k_larger_than_the_data_is_refused():
    data = long([["a"], ["b"], ["a", "b"]])
    with pytest.raises(TooFewRecords, match="fewer than k = 10"):
        disassociate(data, DisassociationConfig(10, 2, seed=0))


def test_records_of_200_codes():
    rng = np.random.default_rng(3)
    pool = [f"c{i}" for i in range(260)]
    sets = [list(rng.choice(pool, size=int(rng.integers(200, 240)), replace=False))
            for _ in range(6)] + [list(rng.choice(pool, size=3, replace=False))
                                  for _ in range(20)]
    data = long(sets)
    result = disassociate(data, DisassociationConfig(3, 2, seed=0))
    verdict = verify_disassociation(data, result.to_json())
    assert verdict.ok, verdict.violations
    assert verdict.checked > 30_000  # distinct pairs of the long records


# ------------------------------------------------- the verifier's arithmetic

def brute_force(doc: dict, codes: set) -> int:
    """Largest number of records holding ``codes`` in one reconstruction,
    straight from the JSON (flat joint clusters), set by set."""
    clusters, shared = doc["clusters"], doc["shared_chunks"]
    groups: dict[tuple, list] = {}
    for s in shared:
        groups.setdefault(tuple(sorted(s["clusters"])), []).append(s)
    joined = {c for g in groups for c in g}
    units = [((i,), []) for i in range(len(clusters)) if i not in joined]
    total = 0
    for members, chunks in units + list(groups.items()):
        shared_codes = {c for s in chunks for c in s["codes"]}
        limit = math.inf
        for s in chunks:
            part = codes & set(s["codes"])
            if part:
                limit = min(limit, sum(part <= set(r) for r in s["subrecords"]))
        local = sum(holders_in_cluster(clusters[i], codes - shared_codes) for i in members)
        total += min(local, limit)
    return int(total)


def holders_in_cluster(cluster: dict, codes: set) -> int:
    value, covered = cluster["size"], set(cluster["item_chunk"]) & codes
    for ch in cluster["record_chunks"]:
        part = codes & set(ch["codes"])
        covered |= part
        if part:
            value = min(value, sum(part <= set(r) for r in ch["subrecords"]))
    return value if covered == codes else 0


def isolate(doc: dict, rng: np.random.Generator) -> dict:
    """Move an item-chunk code into a new record chunk held by a random
    number of the cluster's records (the structure stays valid)."""
    doc = copy.deepcopy(doc)
    options = [c for c in doc["clusters"] if c["item_chunk"]]
    if not options:
        return doc
    cluster = options[int(rng.integers(len(options)))]
    code = cluster["item_chunk"].pop(int(rng.integers(len(cluster["item_chunk"]))))
    held = int(rng.integers(1, cluster["size"] + 1))
    cluster["record_chunks"].append(
        {"codes": [code], "subrecords": [[code]] * held + [[]] * (cluster["size"] - held)})
    return doc


@given(cases(), st.integers(0, 3), st.integers(0, 2**16))
def test_verifier_values_match_brute_force(case, n_mutations, seed):
    sets, cfg = case
    if len(sets) < cfg.k:  # refused (test_release_always_passes_the_verifier)
        return
    data = long(sets)
    doc = disassociate(data, cfg).to_json()
    rng = np.random.default_rng(seed)
    for _ in range(n_mutations):
        doc = isolate(doc, rng)
    bad: list = []
    vocab = np.array(sorted({c for s in sets for c in s}), dtype=object)
    rel = _Release(doc, vocab, bad)
    assert not bad
    if not len(rel.sizes):
        return
    candidates = {frozenset(c) for s in sets for size in range(1, cfg.m + 1)
                  for c in combinations(sorted(set(s)), size)}
    sets_arr = {}
    for c in candidates:
        sets_arr.setdefault(len(c), []).append(sorted(np.searchsorted(vocab, sorted(c))))
    tables = _Tables(rel, len(vocab))
    for size, rows in sets_arr.items():
        arr = np.array(rows, dtype=np.int64).reshape(-1, size)
        got = tables.max_holders(arr, 10**9)
        want = [brute_force(doc, set(vocab[r].tolist())) for r in arr]
        assert got.tolist() == want


# ------------------------------------------------- the verifier catches breakage

FIG1 = list(EXAMPLE.values())


@pytest.fixture(scope="module")
def fig10():
    data = long(FIG1)
    doc = disassociate(data, DisassociationConfig(3, 2, max_cluster_size=6,
                                                  utility_policy=FIG3B, seed=0)).to_json()
    assert verify_disassociation(data, doc).ok
    return data, doc


def _isolate_401(doc):
    p1 = doc["clusters"][0]
    p1["item_chunk"].remove("401.0")
    p1["record_chunks"].append({"codes": ["401.0"],
                                "subrecords": [["401.0"], ["401.0"], [], [], []]})


def _rare_shared_pair(doc):
    doc["shared_chunks"][0]["subrecords"] = (
        [["834.0", "944.01"]] + [["834.0"]] * 3 + [["944.01"]] * 3 + [[]] * 3)


def _drop_code(doc):
    doc["clusters"][1]["item_chunk"].remove("480.1")


def _lose_a_record(doc):
    doc["clusters"][0]["size"] = 4
    for ch in doc["clusters"][0]["record_chunks"]:
        ch["subrecords"].pop()


def _change_support(doc):
    subs = doc["clusters"][0]["record_chunks"][0]["subrecords"]
    subs[[i for i, s in enumerate(subs) if "296.01" in s][0]].remove("296.01")


def _code_twice(doc):
    doc["clusters"][0]["item_chunk"].append("834.0")


def _foreign_code(doc):
    doc["clusters"][1]["item_chunk"].append("999.9")


def _wrong_k(doc):
    doc["k"] = 2


@pytest.mark.parametrize("mutate, expect", [
    (_isolate_401, "401.0"), (_rare_shared_pair, "834.0"), (_drop_code, "missing"),
    (_lose_a_record, "records"), (_change_support, "296.01"), (_code_twice, "two"),
    (_foreign_code, "999.9"), (_wrong_k, "k ="),
])
def test_verifier_catches_a_broken_release(fig10, mutate, expect):
    data, doc = fig10
    broken = copy.deepcopy(doc)
    mutate(broken)
    verdict = verify_disassociation(data, broken, k=3, m=2)
    assert not verdict.ok
    assert any(expect in v for v in verdict.violations), verdict.violations


def test_guarantee_violation_is_reported_as_such(fig10):
    """The two Guarantee-1 breaks keep every support exact: only the
    k^m computation can see them."""
    data, doc = fig10
    for mutate, codes in ((_isolate_401, "'401.0'"), (_rare_shared_pair, "'944.01'")):
        broken = copy.deepcopy(doc)
        mutate(broken)
        verdict = verify_disassociation(data, broken)
        assert verdict.checked > 0
        assert all("reconstruction" in v for v in verdict.violations), verdict.violations
        assert any(codes in v for v in verdict.violations)


def test_verifier_rejects_overlapping_joint_clusters(fig10):
    data, doc = fig10
    broken = copy.deepcopy(doc)
    broken["shared_chunks"].append({"clusters": [1], "codes": [],
                                    "subrecords": [[]] * 5})
    verdict = verify_disassociation(data, broken)
    assert not verdict.ok and any("joint" in v for v in verdict.violations)


@given(cases(), st.sampled_from(["association", "greedy", "random"]), st.integers(0, 2**16))
def test_every_reconstruction_is_consistent_with_the_release(case, linking, seed):
    """Section 3.2: a reconstruction takes every subrecord of every chunk once
    and each item-chunk code (default rule: on one record): each code's count
    is its support in the record and shared chunks plus the item chunks
    holding it, whichever subrecords the linking puts together, and every
    subrecord's codes stay on one record.  ``greedy``: association linking
    with every assignment left to ``greedy_assignment`` (large ones are)."""
    sets, cfg = case
    if len(sets) < cfg.k:
        return
    release = disassociate(long(sets), cfg).release
    rule = linking.replace("greedy", "association")
    with mock.patch.object(lk, "EXACT_WORK", -1.0 if linking == "greedy" else lk.EXACT_WORK):
        drawn = reconstruct(release, seed=seed, linking=rule)
    assert drawn.attrs["linking"] == rule
    expected: Counter = Counter()
    subrecords = []
    for cluster in release.clusters:
        expected.update(cluster.item_chunk)
        for chunk in cluster.record_chunks:
            subrecords += [s for s in chunk.subrecords if s]
    for shared in release.shared_chunks:
        subrecords += [s for s in shared.subrecords if s]
    for s in subrecords:
        expected.update(s)
    assert Counter(drawn["code"]) == expected
    assert drawn["patient_id"].nunique() <= release.n_records
    held = [set(g) for _, g in drawn.groupby("patient_id")["code"]]
    holders = Counter(s for s in map(frozenset, subrecords))
    for s, n in holders.items():  # each subrecord on one record: at least n records hold it
        assert sum(s <= r for r in held) >= n
