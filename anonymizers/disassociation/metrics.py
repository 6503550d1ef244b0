"""Utility of a released dataset (Loukides et al. 2014, Sections 3.3, 6): ARE (Definition 2) over
COUNT-query workloads W1 and W2, MRE (Definition 3) per constraint, the histogram of Figs. 18-20.
Readings chosen and why: docs/methods/disassociation.md#disassociation-metrics."""

from __future__ import annotations

import math
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.errors import ParameterError
from anonymizers.policies import frequent_itemsets
from anonymizers.records import Records, encode

# (label, low, high, low closed, high closed), in percent
MRE_BINS = (
    ("< -10%", -math.inf, -10.0, False, False),
    ("[-10%, -5%)", -10.0, -5.0, True, False),
    ("[-5%, -2.5%)", -5.0, -2.5, True, False),
    ("[-2.5%, 0%]", -2.5, 0.0, True, True),
    ("(0%, 2.5%)", 0.0, 2.5, False, False),
    ("[2.5%, 5%)", 2.5, 5.0, True, False),
    ("[5%, 10%)", 5.0, 10.0, True, False),
    (">= 10%", 10.0, math.inf, True, False),
)
MAX_ENUMERATED = 20_000_000
W1_SUPPORT_PERCENT = 0.625  # Section 6.4's lowest support, Fig. 17
W1_MIN_RECORDS = 20  # on tiny inputs every set of a long record would be frequent


def as_records(data) -> Records:
    """Records from Records or a long ``patient_id, code`` DataFrame."""
    if isinstance(data, Records):
        return data
    if isinstance(data, pd.DataFrame):
        return encode(data.assign(code=data["code"].astype(str)), "patient_id", "code")
    raise ParameterError("data", f"expected Records or a DataFrame, got {type(data).__name__}")


def _indicator(records: Records, sets: Sequence[Sequence[str]]) -> tuple[sp.csc_matrix, np.ndarray]:
    """(codes x sets) 0/1 matrix over ``records``' vocabulary, and which sets
    name a code the records do not have."""
    col = {c: j for j, c in enumerate(records.codes.tolist())}
    rows, cols, missing = [], [], np.zeros(len(sets), dtype=bool)
    for i, s in enumerate(sets):
        for c in set(s):
            if c in col:
                rows.append(col[c])
                cols.append(i)
            else:
                missing[i] = True
    mat = sp.csc_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)),
                        shape=(records.n_codes, len(sets)))
    return mat, missing


def count(data, queries: Sequence[Sequence[str]], batch: int = 256) -> np.ndarray:
    """C(q): records holding every code of each query."""
    records = as_records(data)
    out = np.zeros(len(queries), dtype=np.int64)
    m = records.matrix.astype(np.int32)
    for lo in range(0, len(queries), batch):
        part = list(queries[lo:lo + batch])
        ind, missing = _indicator(records, part)
        hits = (m @ ind).tocsc()
        need = np.array([len(set(q)) for q in part])
        for j in range(len(part)):
            col = hits.data[hits.indptr[j]:hits.indptr[j + 1]]
            out[lo + j] = 0 if missing[j] else int((col == need[j]).sum())
    return out


def are(original, anonymized, queries: Sequence[Sequence[str]]) -> float:
    """Definition 2: mean of |C_A(q) - C_O(q)| / C_O(q) over the workload."""
    if len(queries) == 0:
        raise ParameterError("queries", "the workload is empty")
    c_o = count(original, queries)
    if (c_o == 0).any():
        bad = list(queries[int(np.argmax(c_o == 0))])
        raise ParameterError("queries", f"query {bad} matches no original record; "
                             "Definition 2 divides by its count")
    c_a = count(anonymized, queries)
    return float(np.mean(np.abs(c_a - c_o) / c_o))


def matches(data, policy: Sequence[Sequence[str]]) -> np.ndarray:
    """M(u): records holding at least one code of each constraint."""
    records = as_records(data)
    ind, _ = _indicator(records, policy)
    hits = (records.matrix.astype(np.int32) @ ind).tocsc()
    return np.diff(hits.indptr).astype(np.int64)


def mre(original, anonymized, policy: Sequence[Sequence[str]]) -> np.ndarray:
    """Definition 3 per constraint: (M_O(u) - M_A(u)) / M_O(u); NaN when
    ``M_O(u) = 0``.  Fractions (multiply by 100 for percent)."""
    m_o = matches(original, policy).astype(float)
    m_a = matches(anonymized, policy).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m_o > 0, (m_o - m_a) / m_o, np.nan)


def mre_histogram(values) -> pd.DataFrame:
    """Share of constraints per MRE interval (Figs. 18-20); NaN left out."""
    pct = np.asarray(values, dtype=float) * 100
    pct = pct[~np.isnan(pct)]
    rows = []
    for label, lo, hi, lo_closed, hi_closed in MRE_BINS:
        inside = (pct >= lo if lo_closed else pct > lo) & (pct <= hi if hi_closed else pct < hi)
        n = int(inside.sum())
        rows.append((label, n, n / len(pct) if len(pct) else 0.0))
    return pd.DataFrame(rows, columns=["interval", "count", "share"])


def share_within(values, low: float = -0.05, high: float = 0.05) -> float | None:
    """Share of defined MRE values in ``[low, high)`` (fractions); None when
    no value is defined: a share of nothing is not measured, not 0."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    return float(((v >= low) & (v < high)).mean()) if len(v) else None


def occurring_sets(data, size: int) -> np.ndarray:
    """Distinct sets of ``size`` codes held by some record, as rows of code
    indices (into the records' vocabulary), sorted."""
    records = as_records(data)
    m = records.matrix
    lens = np.diff(m.indptr)
    total = sum(math.comb(int(n), size) * int(c)
                for n, c in zip(*np.unique(lens, return_counts=True)) if n >= size)
    if total > MAX_ENUMERATED:
        raise ParameterError("size", f"{total} code sets of size {size} to enumerate; "
                             "use a smaller size")
    blocks = [np.zeros((0, size), dtype=np.int64)]
    for n in np.unique(lens):
        if n < size:
            continue
        rows = np.flatnonzero(lens == n)
        codes = m.indices[m.indptr[rows][:, None] + np.arange(n)]
        template = np.array(list(combinations(range(int(n)), size)), dtype=np.int64)
        blocks.append(codes[:, template].reshape(-1, size))
    rows = np.concatenate(blocks)
    if records.n_codes ** size >= 2 ** 62:
        return np.unique(rows, axis=0)
    # one int64 key per row: sorting integers is far faster than sorting rows
    scale = records.n_codes ** np.arange(size - 1, -1, -1, dtype=np.int64)
    keys = np.unique(rows.astype(np.int64) @ scale)
    return (keys[:, None] // scale) % records.n_codes


def w2_workload(data, rng: np.random.Generator, n_queries: int = 1000,
                sizes: Sequence[int] = (1, 2)) -> list[tuple[str, ...]]:
    """W2: ``n_queries`` sets, each of a size drawn from ``sizes``, drawn
    uniformly among the occurring sets of that size (see
    docs/methods/disassociation.md#disassociation-metrics)."""
    records = as_records(data)
    pools = {s: occurring_sets(records, s) for s in sorted(set(sizes))}
    pools = {s: p for s, p in pools.items() if len(p)}
    if not pools:
        raise ParameterError("sizes", f"no record holds {min(sizes)} codes or more")
    keys = np.array(sorted(pools))
    chosen = keys[rng.integers(len(keys), size=n_queries)]
    out = []
    for s in chosen.tolist():
        row = pools[s][rng.integers(len(pools[s]))]
        out.append(tuple(records.codes[row].tolist()))
    return out


def w1_workload(data, rng: np.random.Generator, n_chains: int = 250, max_size: int = 4,
                min_support_percent: float = 0.1) -> dict[int, list[tuple[str, ...]]]:
    """W1: chains of frequent itemsets of 1..``max_size`` codes (see
    docs/methods/disassociation.md#disassociation-metrics);
    returns the distinct sets of each size."""
    found = frequent_itemsets(as_records(data), min_support_percent, max_len=max_size)
    return w1_chains(list(found["itemsets"]), rng, n_chains, max_size)


def w1_support(n_records: int) -> float:
    """W1's support in percent: ``W1_SUPPORT_PERCENT``, raised so that a
    frequent itemset is held by at least ``W1_MIN_RECORDS`` records."""
    return max(W1_SUPPORT_PERCENT, 100 * W1_MIN_RECORDS / max(n_records, 1))


def w1_chains(frequent: Sequence[frozenset], rng: np.random.Generator, n_chains: int = 250,
              max_size: int = 4) -> dict[int, list[tuple[str, ...]]]:
    """W1 drawn from ``frequent`` (every frequent itemset of 1..``max_size``
    codes, as frozensets of code strings; the order does not matter)."""
    children: dict[frozenset, list] = {}
    for s in frequent:
        for c in s:
            if len(s) > 1:
                children.setdefault(s - {c}, []).append(s)
    singles = sorted((s for s in frequent if len(s) == 1), key=sorted)
    out: dict[int, set] = {c: set() for c in range(1, max_size + 1)}
    for _ in range(n_chains if singles else 0):
        cur = singles[rng.integers(len(singles))]
        out[1].add(cur)
        while len(cur) < max_size and children.get(cur):
            nxt = sorted(children[cur], key=sorted)
            cur = nxt[rng.integers(len(nxt))]
            out[len(cur)].add(cur)
    return {c: [tuple(sorted(s)) for s in sorted(v, key=sorted)] for c, v in out.items() if v}
