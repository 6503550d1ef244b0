"""Merging clusters whose filling overflows each other (Zoveralli, section 4, future work; off by
default): clusters whose LP level passes another's ideal height merge, until none does.
Readings chosen and why: docs/methods/medco.md#dummies-merge."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anonymizers.dummies.bounds import profile_relaxation


def merge_overflowing(matrix: sp.csr_matrix, labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels after section 4's merges and how many merges were made."""
    labels = np.unique(labels, return_inverse=True)[1]
    merges = 0
    while labels.max() > 0:
        rel = profile_relaxation(matrix, labels, duplicates=True)
        groups = overflow_runs(rel.tops, rel.levels)
        n_before, n_after = int(labels.max()) + 1, int(groups.max()) + 1
        if n_after == n_before:
            break
        merges += n_before - n_after
        labels = groups[labels]
    return labels, merges


def overflow_runs(tops: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Group of each cluster: in ascending order of tops, a cluster joins the
    current run when its top is below the highest level reached in the run."""
    groups = np.empty(len(tops), dtype=np.int64)
    g, reach = -1, -np.inf
    for j in np.argsort(tops, kind="stable"):
        if not tops[j] < reach:
            g, reach = g + 1, -np.inf
        groups[j] = g
        reach = max(reach, float(levels[j]))
    return groups
