"""LDA's utility figures (Tamersoy 2011, IV.4.3-IV.4.4): AvgRE over the workload of (ICD, Age)
pairs in at least 1% of trajectories, and the level histograms of Figures 13-14.
Readings chosen and why: docs/methods/lda.md#longitudinal-metrics."""

from __future__ import annotations

import numpy as np

from anonymizers.longitudinal.hierarchies import EncodedTree

WORKLOAD_SUPPORT = 0.01
QUERY_BLOCK = 256


def workload(icd: np.ndarray, age: np.ndarray, owner: np.ndarray, n: int,
             min_support: float = WORKLOAD_SUPPORT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries ``(u, v)`` (node ids) held by at least ``min_support`` of the
    ``n`` trajectories, with their true counts a(Q)."""
    ok = (icd != 0) & (age != 0)
    triples = np.unique(np.stack([owner[ok], icd[ok], age[ok]], axis=1), axis=0)
    if not len(triples):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    pairs, support = np.unique(triples[:, 1:], axis=0, return_counts=True)
    keep = support >= min_support * n - 1e-9
    return pairs[keep, 0], pairs[keep, 1], support[keep]


def estimated_counts(u: np.ndarray, v: np.ndarray, rel_icd: np.ndarray, rel_age: np.ndarray,
                     rel_group: np.ndarray, group_size: np.ndarray,
                     icd_tree: EncodedTree, age_tree: EncodedTree) -> np.ndarray:
    """e(Q) for each query (u, v) given released pairs grouped by trajectory
    group (a cluster: ``group_size`` patients share its pairs)."""
    out = np.zeros(len(u))
    if not len(rel_icd) or not len(u):
        return out
    order = np.argsort(rel_group, kind="stable")
    gi, ga, grp = rel_icd[order], rel_age[order], rel_group[order]
    starts = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1]])
    sizes = group_size[grp[starts]]
    for lo in range(0, len(u), QUERY_BLOCK):
        qu, qv = u[lo:lo + QUERY_BLOCK], v[lo:lo + QUERY_BLOCK]
        p_icd = np.where(icd_tree.is_ancestor_or_self(gi[:, None], qu[None, :]),
                         icd_tree.leaves[qu][None, :] / icd_tree.leaves[gi][:, None], 0.0)
        p_age = np.where(age_tree.is_ancestor_or_self(ga[:, None], qv[None, :]),
                         age_tree.leaves[qv][None, :] / age_tree.leaves[ga][:, None], 0.0)
        with np.errstate(divide="ignore"):
            log_miss = np.log1p(-(p_icd * p_age))
        prob = 1.0 - np.exp(np.add.reduceat(log_miss, starts, axis=0))
        out[lo:lo + QUERY_BLOCK] = sizes @ prob
    return out


def avg_re(actual: np.ndarray, estimate: np.ndarray) -> float | None:
    """Mean relative error |a - e| / a over the workload (None if empty)."""
    if not len(actual):
        return None
    return float(np.mean(np.abs(actual - estimate) / actual))


def level_histogram(tree: EncodedTree, released: np.ndarray, levels=()) -> dict[str, float]:
    """Percent of values per hierarchy level; ``released`` -1 = suppressed."""
    nodes = np.where(np.asarray(released) < 0, 0, released).astype(np.int64)
    names = tree.level_names(nodes)
    uniq, counts = np.unique(names.astype(str), return_counts=True)
    found = dict(zip(uniq.tolist(), (100.0 * counts / max(1, len(nodes))).tolist()))
    ordered = {lev: found.pop(lev, 0.0) for lev in levels}
    return {**ordered, **dict(sorted(found.items()))}


def kept_at_or_below(histogram: dict, levels: tuple, level: str) -> float:
    """Percent of values released at ``level`` or a finer one (``levels`` runs
    from the finest level to the root)."""
    return float(sum(histogram.get(lev, 0.0) for lev in levels[:levels.index(level) + 1]))


def lm_by_level(tree: EncodedTree, released: np.ndarray, per_pair: np.ndarray,
                offsets: np.ndarray) -> dict[str, float]:
    """Definition 8 restricted to the values released at each level: the
    mean over trajectories of (loss of its values at that level) / |T|."""
    nodes = np.where(np.asarray(released) < 0, 0, released).astype(np.int64)
    names = tree.level_names(nodes).astype(str)
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    scale = np.divide(1.0, lengths, out=np.zeros(len(lengths)), where=lengths > 0)
    n = max(1, len(lengths))
    found = {lev: float(np.sum(per_pair[names == lev] * scale[owner[names == lev]]) / n)
             for lev in np.unique(names).tolist()}
    ordered = {lev: found.pop(lev, 0.0) for lev in tree.levels}
    return {**ordered, **dict(sorted(found.items()))}
