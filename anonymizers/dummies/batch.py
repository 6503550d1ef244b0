"""A batch of dummies being made: sources, code slots and set hashes.

Slots are grouped by dummy (``indptr``); a dummy's code set is hashed as the
wrapping sum of random 64-bit keys of its codes (Zobrist hashing), so equal
sets always hash equal: a hash match can only make the algorithm repair a
dummy that was already new, never let a repeat through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonymizers.dummies.arrays import member


@dataclass
class Batch:
    src: np.ndarray      # real patient index each dummy is made from
    indptr: np.ndarray   # slots of dummy d: codes[indptr[d]:indptr[d+1]]
    codes: np.ndarray    # global code index of every slot

    @property
    def n(self) -> int:
        return len(self.src)

    def owner(self) -> np.ndarray:
        return np.repeat(np.arange(self.n), np.diff(self.indptr))

    def hashes(self, keys: np.ndarray) -> np.ndarray:
        if self.n == 0:
            return np.zeros(0, dtype=np.uint64)
        return np.add.reduceat(keys[self.codes], self.indptr[:-1])

    def keep(self, mask: np.ndarray) -> "Batch":
        slot_mask = np.repeat(mask, np.diff(self.indptr))
        sizes = np.diff(self.indptr)[mask]
        return Batch(self.src[mask], np.concatenate([[0], np.cumsum(sizes)]),
                     self.codes[slot_mask])

    def set_row(self, d: int, codes: np.ndarray) -> None:
        self.codes[self.indptr[d]:self.indptr[d + 1]] = codes


def from_slots(src: np.ndarray, owner: np.ndarray, codes: np.ndarray) -> Batch:
    order = np.argsort(owner, kind="stable")
    sizes = np.bincount(owner, minlength=len(src))
    return Batch(src, np.concatenate([[0], np.cumsum(sizes)]), codes[order])


def set_hashes(indptr: np.ndarray, indices: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Hash of every row of a CSR structure (rows must be non-empty)."""
    return np.add.reduceat(keys[indices], indptr[:-1])


def colliding(h: np.ndarray, existing: np.ndarray,
              priority: np.ndarray | None = None) -> np.ndarray:
    """Dummies whose set hash is already taken: by an existing set (``existing``
    sorted), or by another dummy of the batch that comes first (lower
    ``priority`` first, then batch order)."""
    hit = member(existing, h)
    pr = np.zeros(len(h), dtype=np.int8) if priority is None else priority
    order = np.lexsort((np.arange(len(h)), pr, h))
    later = np.zeros(len(h), dtype=bool)
    later[order[1:]] = h[order[1:]] == h[order[:-1]]
    return hit | later
