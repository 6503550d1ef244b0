"""Merging clusters whose filling overflows each other (Zoveralli, section 4).

Section 4 (future work): "if several dummies are generated, it may happen
that the height of a cluster exceeds the ideal height of another cluster
... it might make sense to just merge those clusters.  One criterion ...
based on the theoretical filled histogram: if ... the patients that are
needed in order to fill a cluster cause the height of another cluster to
surpass the height of a third cluster, then we can merge those clusters."

Readings chosen:

- "the patients needed to fill" the clusters: the optimum of the profile LP
  (``bounds.profile_relaxation``, every real patient duplicated as the end
  of 3.2 asks), which fills all clusters at once with the fewest added code
  occurrences; it gives each cluster's level ``T_j``.
- "surpass the height of a third cluster": ``T_B > top_C`` for a cluster
  ``C`` whose ideal height (its top real frequency) is above ``B``'s.  Then
  ``B`` and ``C`` merge, and so does every cluster whose top lies between
  theirs (their ideal heights are passed too): in order of tops, merged
  clusters are runs.
- Merged clusters can overflow others in turn, so the LP is solved again on
  the merged clusters until no cluster surpasses another's ideal height.

Merging only enlarges clusters, so the minimum anonymity set still holds.
It never lowers the real ratio (flat over a union is flat over each part);
it raises the theoretical ratio to what the dummies really cost.  It is
not the default (``ClusterConfig.merge_overflowing``): the report leaves it
as future work, and on the demo claims it took 100 clusters to 5 and the
real ratio from 9.29 to 19.73 (theoretical 6.20 to 19.68; benchmarks/medco.md).
"""

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
