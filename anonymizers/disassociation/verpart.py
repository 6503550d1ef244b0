"""VERPART (Loukides et al. 2014, Section 4, Fig. 9): split one cluster's codes into k^m-anonymous
record chunks and an item chunk.
Readings chosen and why: docs/methods/disassociation.md#disassociation-verpart."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from anonymizers.disassociation.kmcheck import can_add, row_masks
from anonymizers.disassociation.ragged import Part


# codes up to which plain Python (bitmasks, sets) beats numpy's per-call cost
SMALL = 32


@dataclass(frozen=True)
class Partition:
    """Code indices of each record chunk's domain ``T_1 .. T_v`` (in the order
    VERPART made them) and of the item chunk ``T_T``; ``support`` maps every
    code of the cluster to its support in it."""

    chunks: list[np.ndarray]
    item: np.ndarray
    support: dict


def verpart(part: Part, k: int, m: int, constraint: np.ndarray,
            sensitive: np.ndarray) -> Partition:
    """Fig. 9 on the records of one cluster."""
    n_codes = len(constraint)
    support = part.support(n_codes)
    domain = np.flatnonzero(support)
    low = (support[domain] < k) | sensitive[domain]
    item, chunkable = domain[low], domain[~low]
    order = _ordered(chunkable, support, constraint)
    if m == 2 and len(order) > SMALL:
        column = {t: j for j, t in enumerate(order.tolist())}
        shared = SharedRecords(part, order, n_codes)
        support_of = shared.support()
        too_rare = (support_of > 0) & (support_of < k)
        grow = partial(_grow_pairs, column=column, shared=shared, too_rare=too_rare, k=k)
    else:
        masks = dict(zip(order.tolist(), row_masks(part.dense(order, n_codes))))
        grow = partial(_grow, masks=masks, k=k, m=m)
    chunks = []
    remain = order.tolist()
    while remain:
        cur = grow(remain)
        cur = _drop_split_constraints(cur, remain, constraint)
        chunks.append(np.array(sorted(cur), dtype=np.int64))
        taken = set(cur)
        remain = [t for t in remain if t not in taken]
    return Partition(chunks, item, {int(c): int(support[c]) for c in domain})


def _ordered(codes: np.ndarray, support: np.ndarray, constraint: np.ndarray) -> np.ndarray:
    """Line 5: codes grouped by constraint, each group by decreasing support,
    groups by decreasing support of their first code (ties: vocabulary order)."""
    groups: dict[int, list[int]] = {}
    for c in codes.tolist():
        key = int(constraint[c]) if constraint[c] >= 0 else -1 - c
        groups.setdefault(key, []).append(c)
    ranked = [sorted(g, key=lambda c: (-support[c], c)) for g in groups.values()]
    ranked.sort(key=lambda g: (-support[g[0]], g[0]))
    return np.array([c for g in ranked for c in g], dtype=np.int64)


def _grow(remain: list[int], masks: dict, k: int, m: int) -> list[int]:
    """Lines 9-14: add each waiting code whose addition keeps k^m-anonymity."""
    cur: list[int] = []
    cur_masks: list[int] = []
    for t in remain:
        if can_add(cur_masks, masks[t], k, m):
            cur.append(t)
            cur_masks.append(masks[t])
    return cur


class SharedRecords:
    """How many records two codes of ``order`` share, by code position in
    ``order``.  Small clusters keep their (records x codes) boolean matrix
    and count a code's row when asked (scipy's set-up costs more than the
    counting there); larger ones keep the sparse (codes x codes) product."""

    DENSE_CELLS = 1 << 16

    def __init__(self, part: Part, order: np.ndarray, n_codes: int, dense: bool | None = None):
        if dense is None:
            dense = part.n * len(order) <= self.DENSE_CELLS
        self.held = part.dense(order, n_codes) if dense else None
        self.pairs = None if dense else self._pairs(part, order, n_codes)

    @staticmethod
    def _pairs(part: Part, order: np.ndarray, n_codes: int) -> sp.csr_matrix:
        where = np.full(n_codes, -1, dtype=np.int64)
        where[order] = np.arange(len(order))
        col = where[part.codes]
        sel = col >= 0
        held = sp.csr_matrix((np.ones(int(sel.sum()), dtype=np.int64),
                              (part.pos[sel], col[sel])), shape=(part.n, len(order)))
        held.sum_duplicates()
        held.data[:] = 1
        return (held.T @ held).tocsr()

    def support(self) -> np.ndarray:
        return self.held.sum(axis=0) if self.held is not None else self.pairs.diagonal()

    def rare_with(self, j: int, k: int) -> np.ndarray:
        """Positions of the codes sharing between 1 and k-1 records with ``j``."""
        if self.held is not None:
            counts = self.held[self.held[:, j]].sum(axis=0)
            return np.flatnonzero((counts > 0) & (counts < k))
        row = slice(self.pairs.indptr[j], self.pairs.indptr[j + 1])
        return self.pairs.indices[row][self.pairs.data[row] < k]


def _grow_pairs(remain: list[int], column: dict, shared: SharedRecords, too_rare: np.ndarray,
                k: int) -> list[int]:
    """``_grow`` for m = 2.

    For m = 2, ``can_add``'s test reduces to: no code ``c`` already in the
    chunk shares between 1 and k-1 records with ``t`` (a pattern ``c & t``
    equal to ``t`` has ``|t| >= k`` records; VERPART's codes all have
    support k or more).  So each code that joins bars the codes it now
    excludes (``shared.rare_with``), and the next code to join is the first
    waiting code not barred (``too_rare``: support in [1, k)).
    """
    pos = np.fromiter((column[t] for t in remain), dtype=np.int64, count=len(remain))
    barred = too_rare.copy()
    cur: list[int] = []
    i = 0
    while i < len(pos):
        free = ~barred[pos[i:]]
        if not free.any():
            break
        i += int(free.argmax())
        cur.append(remain[i])
        barred[shared.rare_with(int(pos[i]), k)] = True
        i += 1
    return cur


def _drop_split_constraints(cur: list[int], remain: list[int],
                            constraint: np.ndarray) -> list[int]:
    """Lines 15-17: drop codes of another constraint than the first code's
    when that constraint's waiting codes did not all make it into ``cur``."""
    first = constraint[cur[0]]
    if len(remain) <= SMALL:  # numpy's per-call cost is more than the loop here
        chosen = set(cur)
        incomplete = {int(constraint[t]) for t in remain
                      if constraint[t] >= 0 and t not in chosen}
    else:
        waiting = np.asarray(remain, dtype=np.int64)
        of_waiting = constraint[waiting]
        left_out = (of_waiting >= 0) & ~np.isin(waiting, cur)
        incomplete = set(np.unique(of_waiting[left_out]).tolist())
    return [t for t in cur
            if constraint[t] < 0 or constraint[t] == first or constraint[t] not in incomplete]
