"""A disassociated release written batch by batch as flat tables, verified
from those tables one batch at a time, and its utility measured batch by
batch (issue #7: memory bounded by one batch)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_disassociation_batches import synthetic, with_window
from test_disassociation_properties import cases

from anonymizers import policies
from anonymizers.disassociation import DisassociationConfig, TooFewRecords
from anonymizers.disassociation import metrics as dm
from anonymizers.disassociation.batch_utility import BatchedUtility, frequent_sets, windows
from anonymizers.disassociation.batches import Stitcher, combine, plan, run_batch
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.verify.disassociation import verify_disassociation
from anonymizers.verify.disassociation_tables import (
    TableIndex,
    release_doc,
    verify_disassociation_tables,
)

CHUNKS = ("record_chunks", "item_chunks")


def fragments(data, cfg, batch_size):
    p = plan(data, cfg)
    out = []
    for lo, hi in p.batches(batch_size, cfg.refine_window):
        rows = p.rows[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi)]
        out.append((rows["patient_id"].to_numpy(),
                    run_batch(data[data["patient_id"].isin(rows["patient_id"])], rows, cfg,
                              p.n_clusters)))
    return p, out


def stitched(p, frags) -> dict[str, pd.DataFrame]:
    s = Stitcher(p)
    parts = [s.add(f) for _, f in frags]
    s.metrics()
    names = parts[0].keys() if parts else ()
    return {n: pd.concat([t[n] for t in parts], ignore_index=True) for n in names}


def verdict(data, p, frags, tables, k, m, claim=None):
    """The table verifier over in-memory tables, as the DAG task runs it."""
    if claim is None:
        claim = [(f.first, f.first + len(f.release.clusters), ids) for ids, f in frags]
    index = TableIndex(tables["clusters"], tables["shared_chunk_clusters"],
                       {b: (tables[b]["cluster_id"].min(), tables[b]["cluster_id"].max())
                        if len(tables[b]) else (None, None) for b in CHUNKS},
                       tables["shared_chunks"]["shared_id"].dropna().unique(),
                       {f"{b}.{c}": int(tables[b][c].isna().sum())
                        for b in (*CHUNKS, "shared_chunks") for c in tables[b].columns
                        if c.endswith("_id")})

    def between(lo, hi):
        return {b: tables[b][(tables[b]["cluster_id"] >= lo) & (tables[b]["cluster_id"] < hi)]
                for b in CHUNKS}

    sh = tables["shared_chunks"]
    return verify_disassociation_tables(
        claim, data["patient_id"].unique(), index,
        lambda ids: data[data["patient_id"].isin(ids)], between,
        lambda ids: sh[sh["shared_id"].isin(ids)], k, m)


@given(cases(), st.integers(1, 4), st.integers(1, 9))
def test_tables_written_batch_by_batch_are_the_release_tables(case, window, batch_size):
    data, cfg = with_window(case, window)
    if len(case[0]) < cfg.k:  # refused: see test_disassociation_batches
        return
    p, frags = fragments(data, cfg, batch_size)
    release, metrics = combine(p, [f for _, f in frags], cfg)
    tables = stitched(p, frags)
    for name, frame in release.tables().items():
        pd.testing.assert_frame_equal(tables[name], frame, check_dtype=False)
    v = verdict(data, p, frags, tables, cfg.k, cfg.m)
    assert v.ok == verify_disassociation(data, release.to_json()).ok
    assert v.ok, v.violations


def _case(seed=5, window=4, batch_size=8):
    data = synthetic(600, seed)
    cfg = DisassociationConfig(5, 2, refine_window=window, seed=0)
    p, frags = fragments(data, cfg, batch_size)
    return data, cfg, p, frags, stitched(p, frags)


def test_doc_rebuilt_from_tables_is_the_release():
    data, cfg, p, frags, tables = _case()
    release, _ = combine(p, [f for _, f in frags], cfg)
    n = p.n_clusters
    doc, bad = release_doc(cfg.k, cfg.m, tables["clusters"]["size"].to_numpy(),
                           {b: tables[b] for b in CHUNKS}, tables["shared_chunks"],
                           tables["shared_chunk_clusters"], 0)
    assert not bad
    want = release.to_json()
    norm = lambda d: [(c["size"], sorted((sorted(ch["codes"]), sorted(map(sorted, ch["subrecords"])))
                                         for ch in c["record_chunks"]), sorted(c["item_chunk"]))
                      for c in d["clusters"]]
    assert len(doc["clusters"]) == n and norm(doc) == norm(want)
    assert [(s["clusters"], sorted(s["codes"]), sorted(map(sorted, s["subrecords"])))
            for s in doc["shared_chunks"]] == \
        [(s["clusters"], sorted(s["codes"]), sorted(map(sorted, s["subrecords"])))
         for s in want["shared_chunks"]]


def test_table_verifier_catches_tampered_tables():
    data, cfg, p, frags, tables = _case()
    assert verdict(data, p, frags, tables, 5, 2).ok

    def broken(name, frame):
        return verdict(data, p, frags, {**tables, name: frame}, 5, 2)

    rc = tables["record_chunks"]
    # a record chunk code left on fewer than k subrecords: support below k
    code = rc.groupby(["cluster_id", "chunk_id", "code"]).size().idxmin()
    mask = (rc["cluster_id"] == code[0]) & (rc["chunk_id"] == code[1]) & (rc["code"] == code[2])
    assert not broken("record_chunks", rc.drop(rc.index[mask][1:])).ok
    stray = pd.concat([rc, rc.iloc[:1].assign(cluster_id=p.n_clusters + 3)])
    assert "outside the clusters table" in " ".join(broken("record_chunks", stray).violations)
    far = rc.copy()
    far.loc[far.index[0], "subrecord_id"] = 10_000
    assert "outside 0.." in " ".join(broken("record_chunks", far).violations)
    cl = tables["clusters"].copy()
    cl.loc[0, "size"] = 4
    assert not broken("clusters", cl).ok
    nulls = rc.astype({"cluster_id": "float"})
    nulls.loc[nulls.index[0], "cluster_id"] = None  # a row no batch would read
    assert "null id" in " ".join(broken("record_chunks", nulls).violations)
    sh = tables["shared_chunks"]
    assert len(sh)  # refining made shared chunks
    lost_id = sh.astype({"shared_id": "float"})
    lost_id.loc[lost_id.index[0], "shared_id"] = None
    assert "null id" in " ".join(broken("shared_chunks", lost_id).violations)
    lost = pd.concat([sh, sh.iloc[:1].assign(shared_id=sh["shared_id"].max() + 7)])
    assert "join no cluster" in " ".join(broken("shared_chunks", lost).violations)


def test_table_verifier_checks_the_claimed_split():
    data, cfg, p, frags, tables = _case()
    claim = [(f.first, f.first + len(f.release.clusters), ids) for ids, f in frags]
    (lo0, hi0, a), (lo1, hi1, b), *rest = claim
    swapped = [(lo0, hi0, b), (lo1, hi1, a), *rest]
    assert not verdict(data, p, frags, tables, 5, 2, swapped).ok
    gap = [(lo0, hi0 - 1, a), (lo1, hi1, b), *rest]
    assert "tile" in " ".join(verdict(data, p, frags, tables, 5, 2, gap).violations)
    joins = tables["shared_chunk_clusters"]
    across = pd.concat([joins, pd.DataFrame({"shared_id": [joins["shared_id"].max() + 1] * 2,
                                             "cluster_id": [hi0 - 1, lo1]})])
    v = verdict(data, p, frags, {**tables, "shared_chunk_clusters": across}, 5, 2)
    assert "several batches" in " ".join(v.violations)


def test_k_exceeding_the_data_is_refused_and_only_nothing_would_verify():
    data = pd.DataFrame({"patient_id": ["a", "a", "b"], "code": ["1", "2", "1"]})
    cfg = DisassociationConfig(5, 2)
    with pytest.raises(TooFewRecords):
        plan(data, cfg)
    p, frags = None, []  # the table verifier alone: it accepts only the empty release
    empty = {"clusters": pd.DataFrame({"cluster_id": [], "size": []}, dtype="int64"),
             "shared_chunk_clusters": pd.DataFrame({"shared_id": [], "cluster_id": []},
                                                   dtype="int64"),
             "shared_chunks": pd.DataFrame({"shared_id": [], "subrecord_id": [], "code": []}),
             **{b: pd.DataFrame({"cluster_id": []}) for b in CHUNKS}}
    assert verdict(data, p, frags, empty, 5, 2, [(0, 0, np.array([], dtype=object))]).ok
    wrong = {**empty, "clusters": pd.DataFrame({"cluster_id": [0], "size": [2]})}
    assert not verdict(data, p, frags, wrong, 5, 2, [(0, 0, np.array([], dtype=object))]).ok


def by_window(p, frags, cfg, seed):
    """The whole reconstruction as the batched measure draws it: each window
    with its own generator, records kept apart by window."""
    parts = []
    for _, f in frags:
        for w, part in windows(f.release, f.first, cfg.refine_window):
            drawn = reconstruct(part, seed=np.random.SeedSequence([seed, w]))
            parts.append(drawn.assign(patient_id=f"w{w}/" + drawn["patient_id"]))
    return pd.concat(parts, ignore_index=True)


@given(st.integers(0, 2**16), st.sampled_from([2, 4, 8]), st.sampled_from([4, 16, 64]))
def test_batched_utility_is_the_whole_data_measure(seed, window, batch_size):
    data = synthetic(300, seed % 50)
    cfg = DisassociationConfig(4, 2, refine_window=window, seed=0)
    p, frags = fragments(data, cfg, batch_size)
    policy = [["000", "001"], ["005"], ["010", "011", "012"]]
    u = BatchedUtility(data["code"].unique())
    for ids, _ in frags:
        u.pool(data[data["patient_id"].isin(ids)])
    queries = u.workload(np.random.default_rng(seed), 200)
    assert queries == dm.w2_workload(data, np.random.default_rng(seed), 200)
    batches = [data[data["patient_id"].isin(ids)] for ids, _ in frags]
    frequent = frequent_sets(lambda: iter(batches), 10)
    rng = np.random.default_rng(seed)
    w1 = [q for qs in dm.w1_chains(frequent, rng, 30).values() for q in qs]
    assert dm.w1_chains(frequent, np.random.default_rng(seed), 30) == \
        dm.w1_workload(data, np.random.default_rng(seed), 30, min_support_percent=10)
    u.start(queries, policy, w1)
    for ids, f in frags:
        u.add(data[data["patient_id"].isin(ids)], f.release, f.first, window, seed)
    drawn = by_window(p, frags, cfg, seed)
    assert u.are() == dm.are(data, drawn, queries)
    assert u.are_w1() == dm.are(data, drawn, w1)
    np.testing.assert_array_equal(u.mre(), dm.mre(data, drawn, policy))
    singles = [[c] for c in sorted(data["code"].unique())]
    np.testing.assert_array_equal(u.mre_single_codes(), dm.mre(data, drawn, singles))


@pytest.mark.parametrize("percent", [0.5, 3, 10, 40])
def test_frequent_sets_by_batches_are_fp_growths(percent):
    data = synthetic(400, 7)
    ids = data["patient_id"].unique()
    parts = [data[data["patient_id"].isin(ids[lo:lo + 70])] for lo in range(0, len(ids), 70)]
    found = frequent_sets(lambda: iter(parts), percent, max_len=4)
    expected = policies.frequent_itemsets(data, percent, max_len=4)["itemsets"]
    assert len(found) == len(set(found)) and set(found) == set(expected)


def test_batched_utility_does_not_depend_on_the_batching():
    data = synthetic(800, 9)
    cfg = DisassociationConfig(5, 2, refine_window=4, seed=0)
    figures = set()
    for batch_size in (4, 12, 10_000):
        p, frags = fragments(data, cfg, batch_size)
        u = BatchedUtility(data["code"].unique())
        for ids, _ in frags:
            u.pool(data[data["patient_id"].isin(ids)])
        u.start(u.workload(np.random.default_rng(1)), [["000"]])
        for ids, f in frags:
            u.add(data[data["patient_id"].isin(ids)], f.release, f.first, 4, 3)
        figures.add((len(frags), u.are(), tuple(u.mre())))
    assert len({f[0] for f in figures}) == 3 and len({f[1:] for f in figures}) == 1
