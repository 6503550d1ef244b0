"""Jaccard distances between codes and their HAC groups (Zoveralli, section 2).

Two codes are correlated when they appear in the same patients: their Jaccard
index is |P_a & P_b| / |P_a | P_b| over the sets of patients P holding them,
and the distance is 1 minus the index.  Intersections come from one sparse
product X^T X of the binary patient-by-code matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

EPS = 1e-12


def jaccard_pairs(matrix: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, distance) for every pair a < b of codes sharing a patient.

    Pairs that share no patient are at distance 1 and are not listed.
    """
    x = sp.csr_matrix(matrix, dtype=np.int64)
    inter = sp.triu(x.T @ x, k=1).tocoo()
    freq = np.asarray(x.sum(axis=0)).ravel()
    union = freq[inter.row] + freq[inter.col] - inter.data
    return inter.row.astype(np.int64), inter.col.astype(np.int64), 1.0 - inter.data / union


def jaccard_matrix(matrix: sp.csr_matrix) -> np.ndarray:
    """Dense code-by-code Jaccard distance matrix (0 on the diagonal)."""
    n = matrix.shape[1]
    a, b, d = jaccard_pairs(matrix)
    out = np.ones((n, n))
    out[a, b] = d
    out[b, a] = d
    np.fill_diagonal(out, 0.0)
    return out


def correlated_groups(matrix: sp.csr_matrix, threshold: float, method: str) -> np.ndarray:
    """Group label of every code: HAC on Jaccard distances cut at ``threshold``.

    Only codes with some partner within ``threshold`` can merge below it
    (single, complete and average linkage never merge below the closest pair),
    so the dendrogram is built on those codes alone and every other code is a
    group of its own; the cut is the same as on the full dendrogram.
    """
    n = matrix.shape[1]
    labels = np.arange(n)
    a, b, d = jaccard_pairs(matrix)
    close = d <= threshold + EPS
    involved = np.unique(np.concatenate([a[close], b[close]]))
    if len(involved) < 2:
        return labels
    pos = np.full(n, -1)
    pos[involved] = np.arange(len(involved))
    keep = (pos[a] >= 0) & (pos[b] >= 0)
    dist = np.ones((len(involved), len(involved)))
    dist[pos[a[keep]], pos[b[keep]]] = d[keep]
    dist[pos[b[keep]], pos[a[keep]]] = d[keep]
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform(dist, checks=False), method=method)
    sub = fcluster(tree, t=threshold + EPS, criterion="distance")
    labels[involved] = n + sub  # past every singleton label
    return np.unique(labels, return_inverse=True)[1]
