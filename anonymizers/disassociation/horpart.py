"""HORPART (Loukides et al. 2014, Section 4, Fig. 8): split the records into clusters of similar
records by code supports and utility constraints; ``merge_small`` pools clusters under k records.
Readings chosen and why: docs/methods/disassociation.md#disassociation-horpart."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anonymizers.disassociation.ragged import Part, concat, gather


def horpart(matrix: sp.csr_matrix, constraint: np.ndarray, usable: np.ndarray,
            max_cluster_size: int) -> list[Part]:
    """Fig. 8 on the rows of ``matrix``; returns the clusters in HORPART order.

    ``constraint[j]`` is the constraint of code ``j`` (-1: none); ``usable[j]``
    is False for codes that may not split (sensitive ones).
    """
    n_codes = matrix.shape[1]
    in_policy = constraint >= 0
    clusters: list[Part] = []
    stack = [(gather(matrix, np.arange(matrix.shape[0])), (), -1)]
    while stack:
        part, ignore, u = stack.pop()
        if part.n < max_cluster_size:
            if part.n:
                clusters.append(part)
            continue
        support = part.support(n_codes)
        support[~usable] = 0
        support[list(ignore)] = 0
        a, u = _choose(support, constraint, in_policy, u)
        if a < 0:
            clusters.append(part)
            continue
        has_a = part.holding(a)
        stack.append((part.select(~has_a), ignore, -1))
        stack.append((part.select(has_a), ignore + (a,), u))
    return clusters


def _choose(support: np.ndarray, constraint: np.ndarray, in_policy: np.ndarray,
            u: int) -> tuple[int, int]:
    """Lines 3-10: the splitting code and the constraint to follow (-1: none)."""
    if u >= 0:
        s = np.where(constraint == u, support, 0)
        if s.max(initial=0) > 0:
            return int(s.argmax()), u
    s = np.where(in_policy, support, 0)
    if s.max(initial=0) > 0:
        a = int(s.argmax())
        return a, int(constraint[a])
    if support.max(initial=0) > 0:
        return int(support.argmax()), -1
    return -1, -1


def merge_small(clusters: list[Part], k: int) -> tuple[list[Part], int]:
    """Merge clusters of fewer than ``k`` records (see
    docs/methods/disassociation.md#disassociation-horpart).
    Returns the clusters and how many small clusters were merged."""
    out: list[Part] = []
    pool: list[Part] = []
    merged = 0
    for part in clusters:
        if part.n >= k:
            if pool:
                part = concat(pool + [part])
                pool = []
            out.append(part)
            continue
        merged += 1
        pool.append(part)
        if sum(p.n for p in pool) >= k:
            out.append(concat(pool))
            pool = []
    if pool:
        if out:
            out[-1] = concat([out[-1]] + pool)
        else:
            out.append(concat(pool))
    return out, merged
