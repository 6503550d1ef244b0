"""Row subsets of a CSR matrix as flat (row position, code) arrays.

scipy's fancy row indexing costs tens of microseconds per call in checks and
dtype handling; HORPART and VERPART slice thousands of small row sets, so they
use this plain numpy gather instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Part:
    """The records ``rows`` of a matrix: ``pos[i]`` is the position in ``rows``
    (0..n-1) of the record holding code ``codes[i]``; sorted by position, then
    code."""

    rows: np.ndarray
    pos: np.ndarray
    codes: np.ndarray

    @property
    def n(self) -> int:
        return len(self.rows)

    def support(self, n_codes: int) -> np.ndarray:
        return np.bincount(self.codes, minlength=n_codes)

    def select(self, keep_rows: np.ndarray) -> "Part":
        """The records where the boolean array ``keep_rows`` is True."""
        new_pos = np.cumsum(keep_rows) - 1
        sel = keep_rows[self.pos]
        return Part(self.rows[keep_rows], new_pos[self.pos[sel]], self.codes[sel])

    def holding(self, code: int) -> np.ndarray:
        """Boolean array: which records hold ``code``."""
        out = np.zeros(self.n, dtype=bool)
        out[self.pos[self.codes == code]] = True
        return out

    def only(self, keep: np.ndarray) -> "Part":
        """The same records restricted to the codes where ``keep`` is True."""
        sel = keep[self.codes]
        return Part(self.rows, self.pos[sel], self.codes[sel])

    def dense(self, columns: np.ndarray, n_codes: int) -> np.ndarray:
        """Boolean (n x len(columns)) matrix of the given code columns."""
        where = np.full(n_codes, -1, dtype=np.int64)
        where[columns] = np.arange(len(columns))
        col = where[self.codes]
        sel = col >= 0
        out = np.zeros((self.n, len(columns)), dtype=bool)
        out[self.pos[sel], col[sel]] = True
        return out


def gather(matrix: sp.csr_matrix, rows: np.ndarray) -> Part:
    """The records ``rows`` of ``matrix`` (CSR with sorted indices)."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = matrix.indptr[rows].astype(np.int64)
    lens = matrix.indptr[rows + 1].astype(np.int64) - starts
    total = int(lens.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Part(rows, empty, empty)
    shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    idx = shift + np.arange(total)
    pos = np.repeat(np.arange(len(rows)), lens)
    return Part(rows, pos, matrix.indices[idx].astype(np.int64))


def concat(parts: list[Part]) -> Part:
    """Records of several parts, one after the other."""
    offsets = np.cumsum([0] + [p.n for p in parts[:-1]])
    return Part(np.concatenate([p.rows for p in parts]),
                np.concatenate([p.pos + o for p, o in zip(parts, offsets)]),
                np.concatenate([p.codes for p in parts]))
