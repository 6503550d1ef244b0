"""Verifier of a disassociated release in its flat-table form (the tables the
load writes: ``Disassociated.tables`` documents them), one batch of clusters
at a time, so that memory stays at one batch plus small indexes.

Each batch's rows are turned back into the JSON form and checked by
``verify_disassociation`` against the batch's input records; the split
itself is checked, not trusted (as in ``verify_disassociation_batches``):
the batches' cluster ranges must tile the clusters table, their patients
must partition the input's, and no shared chunk may join clusters of two
batches.  Rows a batch would never read are reported too: rows with a null
id, chunk rows naming a cluster outside the clusters table, shared-chunk
rows of a shared chunk that joins no cluster.

Reading of the tables: a record chunk's domain is the set of codes its rows
hold (the table has no row for an empty subrecord, and VERPART puts no code
in a record chunk without support); subrecord ids run from 0 to the
cluster's size minus 1 (a joint cluster's total size for a shared chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from anonymizers.verify.disassociation import PROPERTY, verify_disassociation
from anonymizers.verify.verdict import Verdict


@dataclass(frozen=True)
class TableIndex:
    """The small, whole-release part of the tables: ``clusters``
    (cluster_id, size), ``shared_chunk_clusters`` (shared_id, cluster_id),
    the (min, max) ``cluster_id`` of the record- and item-chunk tables, the
    distinct ``shared_id`` values of the shared-chunk table, and the number
    of null ids of every table (``{"table.column": n}``): a row with a null
    id is read by no batch."""

    clusters: pd.DataFrame
    shared_chunk_clusters: pd.DataFrame
    chunk_cluster_range: dict
    shared_ids: np.ndarray
    null_ids: dict


def verify_disassociation_tables(batches, patients, index: TableIndex,
                                 records: Callable, tables: Callable, shared: Callable,
                                 k: int, m: int) -> Verdict:
    """``batches`` lists ``(first, stop, patient_ids)``; ``patients`` is every
    input patient id; ``records(ids)`` returns those patients' input rows
    (``patient_id, code``); ``tables(first, stop)`` the record- and item-chunk
    rows of clusters ``first .. stop - 1``; ``shared(ids)`` the shared-chunk
    rows of those shared ids.  The same as ``check_split`` followed by
    ``verify_batches`` over all the batches, which the DAG runs as separate
    tasks."""
    bad = check_split(batches, patients, index)
    if bad:
        return Verdict.from_violations(PROPERTY, 0, bad)
    if not len(index.clusters):  # nothing released: fewer than k records?
        return verify_disassociation(records(np.asarray(patients, dtype=object)),
                                     {"k": k, "m": m, "clusters": [], "shared_chunks": []}, k, m)
    checked, bad = verify_batches(((f"batch {i}", b) for i, b in enumerate(batches)),
                                  index.clusters, index.shared_chunk_clusters,
                                  records, tables, shared, k, m)
    return Verdict.from_violations(PROPERTY, checked, bad)


def verify_batches(labelled, clusters: pd.DataFrame, joins: pd.DataFrame, records: Callable,
                   tables: Callable, shared: Callable, k: int, m: int) -> tuple[int, list[str]]:
    """Guarantee 1 on each ``(label, (first, stop, patient_ids))`` of
    ``labelled`` (an entry of ``verify_disassociation_tables``'s ``batches``
    and the name its violations start with), against those patients'
    records only: ``(checked, violations)``.  ``clusters`` and ``joins`` are
    the whole ``clusters`` and ``shared_chunk_clusters`` tables.  Sound on
    its own only for a split that ``check_split`` accepts (whole clusters,
    whole shared chunks, every patient once) of a release with clusters."""
    sizes = clusters.sort_values("cluster_id")["size"].to_numpy()
    checked, bad = 0, []
    for label, (first, stop, ids) in labelled:
        mine = joins[(joins["cluster_id"] >= first) & (joins["cluster_id"] < stop)]
        doc, problems = release_doc(k, m, sizes[first:stop], tables(first, stop),
                                    shared(np.unique(mine["shared_id"].to_numpy())), mine, first)
        verdict = verify_disassociation(records(ids), doc, k, m) if not problems else None
        checked += verdict.checked if verdict else 0
        where = f"{label} (clusters {first}..{stop - 1})"
        bad += [f"{where}: {v}" for v in (problems or verdict.violations)]
    return checked, bad


def check_split(batches, patients, index: TableIndex) -> list[str]:
    """What is wrong with the split of the release into ``batches`` (see
    ``verify_disassociation_tables``), and with the rows no batch reads."""
    bad = [f"{where}: {n} rows with a null id" for where, n in index.null_ids.items() if n]
    for name in ("clusters", "shared_chunk_clusters"):
        if getattr(index, name).isna().any().any():
            bad.append(f"{name}: a null value")
    if bad:
        return bad
    ids = np.sort(index.clusters["cluster_id"].to_numpy())
    n = len(ids)
    if not np.array_equal(ids, np.arange(n)):
        bad.append(f"the clusters table's ids are not 0..{n - 1}")
    expected = 0
    for first, stop, _ in batches:
        if first != expected or (stop <= first and n):
            bad.append(f"batch cluster ranges do not tile the clusters: got {first}..{stop - 1}"
                       f" where cluster {expected} was next")
        expected = max(expected, stop)
    if expected != n:
        bad.append(f"the batches cover {expected} clusters, the release has {n}")
    claimed = pd.Index(np.concatenate([np.asarray(p, dtype=object) for _, _, p in batches])
                       if batches else np.zeros(0, dtype=object))
    if claimed.has_duplicates:
        bad.append("a patient is claimed by two batches")
    actual = pd.Index(np.asarray(patients, dtype=object))
    if n and (len(claimed.difference(actual)) or len(actual.difference(claimed))):
        bad.append(f"the batches' patients ({claimed.nunique()}) are not the input's "
                   f"({len(actual)})")
    for name, (lo, hi) in index.chunk_cluster_range.items():
        if lo is not None and (lo < 0 or hi >= n):
            bad.append(f"{name}: cluster ids {lo}..{hi} reach outside the clusters table")
    joins = index.shared_chunk_clusters
    if len(joins) and ((joins["cluster_id"] < 0) | (joins["cluster_id"] >= n)).any():
        bad.append("shared_chunk_clusters names a cluster outside the clusters table")
    stray = np.setdiff1d(np.asarray(index.shared_ids), joins["shared_id"].to_numpy())
    if len(stray):
        bad.append(f"shared chunks {stray[:5].tolist()} join no cluster")
    starts = np.array([b[0] for b in batches], dtype=np.int64)
    owner = np.searchsorted(starts, joins["cluster_id"].to_numpy(), side="right") - 1
    spans = pd.Series(owner).groupby(joins["shared_id"].to_numpy()).nunique()
    for sid in spans.index[spans.to_numpy() > 1][:5]:
        bad.append(f"shared chunk {sid} joins clusters of several batches")
    return bad


def release_doc(k: int, m: int, sizes: np.ndarray, chunk_rows: dict, shared_rows: pd.DataFrame,
                joins: pd.DataFrame, first: int) -> tuple[dict, list[str]]:
    """The JSON form of clusters ``first ..`` (sizes ``sizes``) from their table
    rows, with cluster and shared ids made local; and the problems found."""
    bad: list[str] = []
    n = len(sizes)
    clusters = [{"size": int(s), "record_chunks": [], "item_chunk": []} for s in sizes]
    rc = chunk_rows["record_chunks"]
    for (cid, hid), sub, codes in _groups(rc, ["cluster_id", "chunk_id"]):
        ci = cid - first
        clusters[ci]["record_chunks"].append({
            "codes": sorted(set(codes), key=str),
            "subrecords": _subrecords(sub, codes, int(sizes[ci]),
                                      f"cluster {cid} record chunk {hid}", bad)})
    for cid, codes in chunk_rows["item_chunks"].groupby("cluster_id", sort=True)["code"]:
        clusters[int(cid) - first]["item_chunk"] = codes.tolist()
    members = joins.groupby("shared_id", sort=True)["cluster_id"].apply(list)
    rows = {sid: (sub, codes) for (sid,), sub, codes in _groups(shared_rows, ["shared_id"])}
    shared = []
    for sid, cl in members.items():
        local = sorted(int(c) - first for c in cl)
        total = int(sizes[local].sum()) if all(0 <= c < n for c in local) else 0
        sub, codes = rows.get(sid, (np.zeros(0, dtype=np.int64), []))
        shared.append({"clusters": local, "codes": sorted(set(codes), key=str),
                       "subrecords": _subrecords(sub, codes, total, f"shared chunk {sid}", bad)})
    return {"k": k, "m": m, "clusters": clusters, "shared_chunks": shared}, bad


def _groups(rows: pd.DataFrame, keys: list[str]):
    """``(key values, subrecord ids, codes)`` per group of ``keys``, in key order."""
    if not len(rows):
        return
    cols = [rows[c].to_numpy() for c in keys]
    sub = rows["subrecord_id"].to_numpy()
    order = np.lexsort((sub, *reversed(cols)))
    cols, sub = [c[order] for c in cols], sub[order]
    codes = rows["code"].to_numpy(dtype=object)[order].tolist()
    change = np.zeros(len(sub), dtype=bool)
    change[0] = True
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    cuts = np.r_[np.flatnonzero(change), len(sub)]
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        yield tuple(int(c[a]) for c in cols), sub[a:b], codes[a:b]


def _subrecords(sub: np.ndarray, codes: list, size: int, where: str, bad: list[str]) -> list:
    if len(sub) and (sub.min() < 0 or sub.max() >= size):
        bad.append(f"{where}: subrecord ids {int(sub.min())}..{int(sub.max())} outside "
                   f"0..{size - 1}")
        return []
    out: list[list] = [[] for _ in range(size)]
    for j, c in zip(sub.tolist(), codes):
        out[j].append(c)
    return out
