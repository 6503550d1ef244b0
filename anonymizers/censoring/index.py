"""Distinguishability dis(D) against an indexed population (Tamersoy 2011, III.4): the number
of population records containing the multiset D (counts compared with >=), cached per multiset.
Readings chosen and why: docs/methods/gccens.md#censoring-index."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class PopulationIndex:
    """Containment counts of multisets in a population.

    Parameters
    ----------
    counts : scipy.sparse matrix, shape (n_population, n_codes)
        Copies of each code in each population record, over the same code
        vocabulary as the multisets that will be queried.  Codes outside that
        vocabulary need not be present: they never affect containment.
    dense_fraction : float, default 1/32
        A set ``P(c, t)`` covering more than this fraction of the population is
        held as a bitset (n/8 bytes), otherwise as int32 row numbers (4 bytes
        each); 1/32 is where the two take the same memory.
    """

    def __init__(self, counts: sp.spmatrix, dense_fraction: float = 1 / 32):
        csc = sp.csc_matrix(counts)
        csc.sum_duplicates()
        csc.sort_indices()
        self.n = int(csc.shape[0])
        self._ptr, self._rows, self._data = csc.indptr, csc.indices, csc.data
        self._dense_min = dense_fraction * self.n
        self._sets: dict[tuple[int, int], tuple[int, bool, np.ndarray]] = {}
        self._cache: dict[tuple[bytes, bytes], int] = {}

    def dis(self, codes: np.ndarray, counts: np.ndarray) -> int:
        """Number of population records containing the multiset
        ``{codes[i]: counts[i]}`` (entries with count 0 are ignored)."""
        codes = np.asarray(codes, dtype=np.int32)
        counts = np.asarray(counts, dtype=np.int32)
        keep = counts > 0
        codes, counts = codes[keep], counts[keep]
        key = (codes.tobytes(), counts.tobytes())
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._count(codes, counts)
        return hit

    def dis_rows(self, records: sp.csr_matrix, rows: np.ndarray | None = None) -> np.ndarray:
        """``dis`` of the given rows of a CSR count matrix (all rows by default)."""
        rows = np.arange(records.shape[0]) if rows is None else np.asarray(rows)
        ptr, idx, data = records.indptr, records.indices, records.data
        out = np.empty(len(rows), dtype=np.int64)
        for i, r in enumerate(rows):
            s = slice(ptr[r], ptr[r + 1])
            out[i] = self.dis(idx[s], data[s])
        return out

    def _count(self, codes: np.ndarray, counts: np.ndarray) -> int:
        if len(codes) == 0:
            return self.n
        sets = sorted((self._set(int(c), int(t)) for c, t in zip(codes, counts)),
                      key=lambda s: s[0])
        size, dense, first = sets[0]
        if size == 0:
            return 0
        if dense:
            acc = first.copy()
            for _, _, bits in sets[1:]:
                np.bitwise_and(acc, bits, out=acc)
            return int(np.bitwise_count(acc).sum(dtype=np.int64))
        rows = first
        for _, dense, members in sets[1:]:
            rows = rows[_member(rows, dense, members)]
            if len(rows) == 0:
                break
        return len(rows)

    def _set(self, code: int, at_least: int) -> tuple[int, bool, np.ndarray]:
        """``P(code, at_least)`` as (size, is_bitset, bitset or sorted rows)."""
        key = (code, at_least)
        found = self._sets.get(key)
        if found is None:
            s = slice(self._ptr[code], self._ptr[code + 1])
            rows = self._rows[s][self._data[s] >= at_least].astype(np.int32)
            if len(rows) > self._dense_min:
                mask = np.zeros(self.n, dtype=bool)
                mask[rows] = True
                found = (len(rows), True, np.packbits(mask, bitorder="little"))
            else:
                found = (len(rows), False, rows)
            self._sets[key] = found
        return found


def _member(rows: np.ndarray, dense: bool, members: np.ndarray) -> np.ndarray:
    """Boolean mask: which of the sorted ``rows`` are in ``members``."""
    if dense:
        return ((members[rows >> 3] >> (rows & 7).astype(np.uint8)) & 1).astype(bool)
    if len(members) == 0:
        return np.zeros(len(rows), dtype=bool)
    pos = np.minimum(np.searchsorted(members, rows), len(members) - 1)
    return members[pos] == rows
