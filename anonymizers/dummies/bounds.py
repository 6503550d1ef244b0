"""Lower bounds on the real ratio of Fig. 7 (Zoveralli) that any release can reach:
``any_profile`` (dummies free) and ``profile_lp`` (dummies keep a real size profile; HiGHS).
Readings chosen and why: docs/methods/medco.md#dummies-bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linprog

from anonymizers.dummies.profiles import Profiles, build_profiles


@dataclass(frozen=True)
class Relaxation:
    """Optimum of the profile LP: ``ratio`` (1 + added / real occurrences)
    and the level each cluster reaches under it (fractional dummies)."""

    ratio: float
    levels: np.ndarray
    tops: np.ndarray


def cluster_needs(freq: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster: the top real frequency and ``L_j``
    (see docs/methods/medco.md#dummies-bounds)."""
    n_cl = int(labels.max()) + 1
    top = np.zeros(n_cl, dtype=np.int64)
    np.maximum.at(top, labels, freq)
    need = np.bincount(labels, weights=np.maximum(0, top[labels] - 1 - freq), minlength=n_cl)
    return top, need


def any_profile_bound(freq: np.ndarray, labels: np.ndarray, duplicates: bool = False) -> float:
    """Least real ratio of a release whose dummies may take codes anywhere."""
    occ = float(freq.sum())
    added = float(cluster_needs(freq, labels)[1].sum())  # a plain float for JSON metrics
    return 1.0 + max(added, occ if duplicates else 0.0) / occ


def profile_relaxation(matrix: sp.csr_matrix, labels: np.ndarray,
                       duplicates: bool = False) -> Relaxation:
    """The profile LP of docs/methods/medco.md#dummies-bounds on a binary patients x codes
    ``matrix`` whose code ``c`` is in cluster ``labels[c]``."""
    freq = np.asarray(matrix.sum(axis=0)).ravel().astype(np.int64)
    n_cl = int(labels.max()) + 1
    members = [np.flatnonzero(labels == j) for j in range(n_cl)]
    profiles = build_profiles(matrix, labels, members)
    _, first = np.unique(profiles.of, return_index=True)
    k = sp.csr_matrix(profiles.counts[first], dtype=float)
    top, need = cluster_needs(freq, labels)
    unused = profiles.possible - _distinct_sets(matrix, profiles)
    lo = np.minimum(np.bincount(profiles.of), unused) if duplicates else np.zeros(len(first))
    res = linprog(np.asarray(k.sum(axis=1)).ravel(), A_ub=-k.T.tocsr(), b_ub=-need,
                  bounds=np.column_stack([lo, unused.astype(float)]), method="highs")
    sizes = np.bincount(labels, minlength=n_cl)
    if res.status == 2:  # not even fractional dummies flatten: no release exists
        return Relaxation(ratio=np.inf, levels=np.full(n_cl, np.inf), tops=top)
    if res.status != 0:
        raise RuntimeError(f"profile LP not solved: {res.message}")
    occ = float(freq.sum())
    levels = np.maximum(top, (np.bincount(labels, weights=freq, minlength=n_cl)
                              + k.T @ res.x) / sizes)
    return Relaxation(ratio=1.0 + float(res.fun) / occ, levels=levels, tops=top)


def _distinct_sets(matrix: sp.csr_matrix, profiles: Profiles) -> np.ndarray:
    """Distinct real code sets of each profile (they cannot be dummies)."""
    m = sp.csr_matrix(matrix)
    m.sort_indices()
    keys = [m.indices[a:b].tobytes() for a, b in zip(m.indptr[:-1], m.indptr[1:])]
    set_id, _ = pd.factorize(pd.Series(keys, dtype=object))
    _, first = np.unique(set_id, return_index=True)
    return np.bincount(profiles.of[first], minlength=len(profiles.possible))
