"""The anonymized database D~ of UGACLIP as bitsets (one per anonymized item).

Records are bit positions; code c's original record set is ``orig[c]``.  An
anonymized item (Definition 1) is a group of codes with a *representative*
(its smallest code index); ``bits[rep]`` is the set of records holding any code
of the item, i.e. the records of D~ that contain the item.  Suppressed codes
and padding point at an extra all-records row ``ONES`` so that an AND over a
constraint's items simply skips them.

Memory: (number of codes + 1) x ceil(records / 64) words, twice.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

_BATCH_WORDS = 4_000_000  # words of bitsets held at once in ``supports``


class ItemState:
    """Items, suppressed codes and item supports over a fixed set of records."""

    def __init__(self, matrix: sp.csr_matrix):
        self.n_records, self.n_codes = matrix.shape
        self.ONES = self.n_codes
        words = max(1, -(-self.n_records // 64))
        coo = matrix.tocoo()
        orig = np.zeros((self.n_codes + 1, words), dtype=np.uint64)
        rows = coo.row.astype(np.int64)
        np.bitwise_or.at(orig, (coo.col, rows // 64),
                         np.left_shift(np.uint64(1), (rows % 64).astype(np.uint64)))
        full = np.arange(self.n_records)
        np.bitwise_or.at(orig, (np.full(len(full), self.ONES), full // 64),
                         np.left_shift(np.uint64(1), (full % 64).astype(np.uint64)))
        self.orig = orig
        self.bits = orig.copy()
        self.rep = np.arange(self.n_codes + 1)
        self.members: dict[int, list[int]] = {c: [c] for c in range(self.n_codes)}
        self.suppressed = np.zeros(self.n_codes + 1, dtype=bool)
        self.suppressed[self.ONES] = True
        self.item_support = popcount(self.bits)
        self.size = np.ones(self.n_codes + 1, dtype=np.int64)
        self.code_support = self.item_support[: self.n_codes].copy()

    def merge(self, a: int, b: int) -> list[int]:
        """Put the items of codes a and b together; return the new item's codes."""
        ra, rb = sorted((int(self.rep[a]), int(self.rep[b])))
        assert ra != rb and not self.suppressed[a] and not self.suppressed[b]
        codes = sorted(self.members.pop(ra) + self.members.pop(rb))
        self._set_item(codes, self.bits[ra] | self.bits[rb])
        return codes

    def suppress(self, c: int) -> list[int]:
        """Remove code c from its item and from every record; return the codes
        whose item changed (c's former item, c included)."""
        item = self.members.pop(int(self.rep[c]))
        self.suppressed[c] = True
        self.rep[c] = self.ONES
        rest = [x for x in item if x != c]
        if rest:
            self._set_item(rest, np.bitwise_or.reduce(self.orig[rest], axis=0))
        return item

    def restore(self, c: int, into: int | None = None) -> list[int]:
        """Give suppressed code c back, into the item of code ``into`` or as an
        item of its own; return the codes of c's new item.  Records holding c
        hold that item again, so only its support can change, upwards."""
        assert self.suppressed[c] and (into is None or not self.suppressed[into])
        self.suppressed[c] = False
        if into is None:
            self._set_item([int(c)], self.orig[c].copy())
            return [int(c)]
        r = int(self.rep[into])
        codes = sorted(self.members.pop(r) + [int(c)])
        self._set_item(codes, self.bits[r] | self.orig[c])
        return codes

    def _set_item(self, codes: list[int], bits: np.ndarray) -> None:
        r = codes[0]
        self.members[r] = codes
        self.rep[codes] = r
        self.bits[r] = bits
        self.item_support[r] = popcount(bits)
        self.size[r] = len(codes)

    def item_of(self, c: int) -> list[int]:
        return self.members[int(self.rep[c])]

    def support(self, codes) -> int:
        """Records of D~ holding every item of the unsuppressed ``codes``."""
        reps = np.unique(self.rep[np.asarray(codes, dtype=np.int64)])
        return int(popcount(np.bitwise_and.reduce(self.bits[reps], axis=0)))

    def supports(self, padded: np.ndarray, lengths: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``support`` of many constraints at once: row i of ``padded`` holds
        the codes of constraint i, padded with ONES after ``lengths[i]``."""
        out = np.zeros(len(ids), dtype=np.int64)
        if len(ids) == 0:
            return out
        order = np.argsort(lengths[ids], kind="stable")
        step = max(1, _BATCH_WORDS // self.bits.shape[1])
        for s in range(0, len(ids), step):
            chunk = order[s:s + step]
            rows = ids[chunk]
            width = max(1, int(lengths[rows].max()))
            reps = self.rep[padded[rows, :width]]
            acc = self.bits[reps[:, 0]].copy()
            for j in range(1, width):
                acc &= self.bits[reps[:, j]]
            out[chunk] = popcount(acc)
        return out


def popcount(words: np.ndarray) -> np.ndarray:
    """Number of set bits along the last axis."""
    return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
