"""Size profiles: how many codes a patient holds in each cluster.

A dummy made from a real patient keeps that patient's profile (section 3.2:
the dummy has the same weight, and in every cluster it takes as many codes
as its source holds there).  A profile with counts ``k_j`` admits exactly
``prod_j C(n_j, k_j)`` distinct code sets; once that many exist, another
dummy of the profile cannot be new (pigeonhole), whatever the repair.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb, prod

import numpy as np
import pandas as pd
import scipy.sparse as sp

CAP = 2 ** 62


@dataclass(frozen=True)
class Profiles:
    """``of[i]``: profile id of real patient ``i``; ``counts``: patients x
    clusters CSR of per-cluster code counts; ``possible[p]``: distinct code sets
    profile ``p`` admits (capped at 2**62)."""

    of: np.ndarray
    counts: sp.csr_matrix
    possible: np.ndarray
    clusters: list[np.ndarray]

    def cluster_counts(self, j: int) -> np.ndarray:
        return np.asarray(self.counts[:, j].todense()).ravel()

    def enumerate(self, patient: int, limit: int) -> np.ndarray | None:
        """Every code set of ``patient``'s profile as rows of sorted code indices,
        or None when there are more than ``limit``."""
        if self.possible[self.of[patient]] > limit:
            return None
        row = self.counts[patient]
        parts = [np.array(list(combinations(self.clusters[j], k)), dtype=np.int64)
                 for j, k in zip(row.indices, row.data)]
        idx = np.indices([len(p) for p in parts]).reshape(len(parts), -1)
        out = np.concatenate([p[i] for p, i in zip(parts, idx)], axis=1)
        return np.sort(out, axis=1)


def build_profiles(matrix: sp.csr_matrix, cluster_of: np.ndarray,
                   clusters: list[np.ndarray]) -> Profiles:
    """Profiles of the rows of a binary patients x codes matrix."""
    n_cl = len(clusters)
    onehot = sp.csr_matrix((np.ones(len(cluster_of), dtype=np.int64),
                            (np.arange(len(cluster_of)), cluster_of)),
                           shape=(len(cluster_of), n_cl))
    counts = sp.csr_matrix(sp.csr_matrix(matrix, dtype=np.int64) @ onehot)
    counts.eliminate_zeros()
    counts.sort_indices()
    of, first = _factorize_first(_row_keys(counts))
    sizes = np.array([len(c) for c in clusters])
    possible = np.array([_n_sets(counts[i], sizes) for i in first], dtype=np.int64)
    return Profiles(of=of, counts=counts, possible=possible, clusters=clusters)


def profile_ids(profiles: Profiles, cluster_of: np.ndarray, indptr: np.ndarray,
                codes: np.ndarray) -> np.ndarray:
    """The profile of each code set ``codes[indptr[d]:indptr[d+1]]`` (by its own
    codes, not its source's), or -1 where no real patient has that profile."""
    n_sets = len(indptr) - 1
    owner = np.repeat(np.arange(n_sets), np.diff(indptr))
    counts = sp.csr_matrix((np.ones(len(codes), dtype=np.int64), (owner, cluster_of[codes])),
                           shape=(n_sets, len(profiles.clusters)))
    counts.sum_duplicates()
    counts.sort_indices()
    known = dict(zip(_row_keys(profiles.counts), profiles.of))
    return np.array([known.get(key, -1) for key in _row_keys(counts)], dtype=np.int64)


def _row_keys(counts: sp.csr_matrix) -> list[bytes]:
    """One key per row of a per-cluster count matrix (canonical CSR): equal profiles, equal keys."""
    idx, data = counts.indices.astype(np.int64), counts.data.astype(np.int64)
    return [idx[a:b].tobytes() + data[a:b].tobytes()
            for a, b in zip(counts.indptr[:-1], counts.indptr[1:])]


def _factorize_first(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    codes, _ = pd.factorize(pd.Series(keys, dtype=object))
    _, first = np.unique(codes, return_index=True)
    return codes.astype(np.int64), first


def _n_sets(row: sp.csr_matrix, sizes: np.ndarray) -> int:
    return min(CAP, prod(comb(int(sizes[j]), int(k)) for j, k in zip(row.indices, row.data)))
