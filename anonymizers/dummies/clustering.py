"""MedCo code clustering (Zoveralli, section 2): HAC on Jaccard distances, clusters by frequency,
then the minimum anonymity set; optionally overflowing clusters merged (``merge``).
Readings chosen and why: docs/methods/medco.md#dummies-clustering."""

from __future__ import annotations

import numpy as np

from anonymizers.dummies.config import ClusterConfig
from anonymizers.dummies.inputs import encode_input
from anonymizers.dummies.jaccard import correlated_groups
from anonymizers.dummies.merge import merge_overflowing
from anonymizers.dummies.results import ClusterResult


def cluster_codes(df, config: ClusterConfig) -> ClusterResult:
    """Cluster the codes of ``df`` (columns ``patient_id, code``) for water-filling."""
    records = encode_input(df)
    freq = records.support()
    n_codes, a = records.n_codes, config.min_anonymity_set
    groups = correlated_groups(records.matrix, config.distance_threshold, config.linkage)
    n_max = max(1, n_codes // a)
    n_eff = min(config.n_clusters or n_max, n_max)
    if config.frequency_step == "least_ratio":
        labels = least_ratio_runs(groups, freq, a, n_eff)
    else:
        unit_mean = np.bincount(groups, weights=freq) / np.bincount(groups)
        labels = ward_1d(unit_mean[groups], n_eff)
    labels, moved, split = enforce_min_anonymity(labels, groups, freq, a)
    before = theoretical_ratio(labels, freq)
    merged = 0
    if config.merge_overflowing:
        labels, merged = merge_overflowing(records.matrix, labels)
    clusters = _ordered_clusters(labels, freq, records.codes)
    sizes = [len(c) for c in clusters]
    multi = [np.flatnonzero(groups == g) for g in np.flatnonzero(np.bincount(groups) > 1)]
    metrics = {
        "n_patients": records.n_records, "n_codes": n_codes,
        "min_anonymity_set": a, "n_clusters_requested": config.n_clusters,
        "frequency_step": config.frequency_step,
        "n_clusters": len(clusters), "cluster_sizes": sizes,
        "smallest_cluster": min(sizes), "anonymity_set_met": min(sizes) >= a,
        "correlated_groups": len(multi), "codes_in_correlated_groups": int(sum(map(len, multi))),
        "codes_moved_for_anonymity_set": moved, "correlated_groups_split": split,
        "clusters_merged_section4": merged, "theoretical_ratio_before_merging": before,
        "theoretical_ratio": theoretical_ratio(labels, freq),
    }
    groups_out = sorted(sorted(records.codes[g].tolist()) for g in multi)
    return ClusterResult(clusters=clusters, correlated_groups=groups_out, metrics=metrics)


def ward_1d(values: np.ndarray, n_groups: int) -> np.ndarray:
    """Ward agglomeration of scalar ``values`` into at most ``n_groups`` labels.

    Equal values start in one group (they merge at zero cost).  In one
    dimension the cheapest Ward merge joins neighbours in sorted order, so only
    those are compared; ties go to the lower values.  Labels follow ascending
    value.
    """
    uniq, inv = np.unique(values, return_inverse=True)
    mean, weight = uniq.astype(float), np.bincount(inv).astype(float)
    label_of_uniq = np.arange(len(uniq))
    while len(mean) > n_groups:
        cost = weight[:-1] * weight[1:] / (weight[:-1] + weight[1:]) * np.diff(mean) ** 2
        i = int(np.argmin(cost))
        total = weight[i] + weight[i + 1]
        mean[i] = (weight[i] * mean[i] + weight[i + 1] * mean[i + 1]) / total
        weight[i] = total
        mean, weight = np.delete(mean, i + 1), np.delete(weight, i + 1)
        label_of_uniq[label_of_uniq > i] -= 1
    return label_of_uniq[inv]


def least_ratio_runs(groups: np.ndarray, freq: np.ndarray, a: int, n_clusters: int) -> np.ndarray:
    """Step 2 read as "clusters by frequency that are cheapest to flatten".

    Units are the correlated groups (``groups`` labels each code), sorted by
    their top frequency; clusters are contiguous runs of them, each of at
    least ``a`` codes.  A run C costs ``sum_c max(0, top_C - 1 - f_c)``, the
    occurrences its flattening within 1 needs (bounds.cluster_needs), and
    the runs minimising the total are found exactly by dynamic programming.
    Exactly ``n_clusters`` runs when the units allow it, else the most
    they allow (fewer); one run when even that fails (fewer than ``a``
    codes).  Labels follow ascending top frequency.
    """
    n_units = int(groups.max()) + 1
    size = np.bincount(groups, minlength=n_units)
    top = np.zeros(n_units, dtype=np.int64)
    np.maximum.at(top, groups, freq)
    at_top = np.bincount(groups, weights=freq == top[groups], minlength=n_units)
    order = np.lexsort((np.arange(n_units), top))  # by top, ties by unit id
    cost = _run_costs(size[order], top[order], at_top[order].astype(np.int64),
                      np.bincount(groups, weights=freq, minlength=n_units)[order], a)
    cuts = _best_cuts(cost, n_clusters)
    run_of_unit = np.empty(n_units, dtype=np.int64)
    run_of_unit[order] = np.repeat(np.arange(len(cuts) - 1), np.diff(cuts))
    return run_of_unit[groups]


_INF = np.iinfo(np.int64).max // 4


def _run_costs(size, top, at_top, mass, a) -> np.ndarray:
    """``cost[i, j]``: flattening units ``i..j-1`` (sorted by top) to their
    top; ``_INF`` for runs under ``a`` codes or empty.  Since
    ``max(0, T - 1 - f) = T - 1 - f + [f == T]`` for ``f <= T``, a run costs
    ``n (T - 1) - sum f + #codes at T``, and codes at T lie in the run's
    units whose top is T (a block of the sort)."""
    n_codes = np.concatenate([[0], np.cumsum(size)])
    f_sum = np.concatenate([[0], np.cumsum(mass)]).round().astype(np.int64)
    eq = np.concatenate([[0], np.cumsum(at_top)])
    n_units = len(size)
    tie_start = np.searchsorted(top, top, side="left")  # first unit with the same top
    i = np.arange(n_units + 1)[:, None]
    j = np.arange(1, n_units + 1)[None, :]
    last_top = top[j - 1]
    count = n_codes[j] - n_codes[i]
    ties = eq[j] - eq[np.maximum(i, tie_start[j - 1])]
    cost = count * (last_top - 1) - (f_sum[j] - f_sum[i]) + ties
    full = np.full((n_units + 1, n_units + 1), _INF, dtype=np.int64)
    full[:, 1:] = np.where((count >= a) & (i < j), cost, _INF)
    return full


def _best_cuts(cost: np.ndarray, n_clusters: int) -> np.ndarray:
    """Cut points ``0 = c_0 < ... < c_k = U`` of the least total ``cost``
    with ``k = n_clusters`` runs, or the largest feasible ``k`` below it."""
    n = cost.shape[0] - 1
    best, back = [np.full(n + 1, _INF, dtype=np.int64)], []
    best[0][0] = 0
    for _ in range(n_clusters):
        total = np.where((best[-1][:, None] < _INF) & (cost < _INF), best[-1][:, None] + cost, _INF)
        back.append(np.argmin(total, axis=0))
        best.append(total[back[-1], np.arange(n + 1)])
    k = max((k for k in range(1, n_clusters + 1) if best[k][n] < _INF), default=None)
    if k is None:
        return np.array([0, n])
    cuts = [n]
    for step in range(k, 0, -1):
        cuts.append(int(back[step - 1][cuts[-1]]))
    return np.array(cuts[::-1])


def enforce_min_anonymity(labels: np.ndarray, groups: np.ndarray, freq: np.ndarray,
                          a: int) -> tuple[np.ndarray, int, int]:
    """Move codes from the biggest cluster into any cluster under ``a`` codes.

    Returns the new labels, how many codes moved and how many correlated
    groups had to be split.  Assumes ``n_clusters * a <= n_codes`` (or one
    cluster), which ``cluster_codes`` ensures, so the donor always has a code
    to spare.
    """
    labels, groups = labels.copy(), groups.copy()
    moved = split = 0
    n_cl = int(labels.max()) + 1
    while n_cl > 1:
        sizes = np.bincount(labels, minlength=n_cl)
        recv, donor = int(np.argmin(sizes)), int(np.argmax(sizes))
        need, spare = a - int(sizes[recv]), int(sizes[donor]) - a
        if need <= 0:
            break
        lo, hi = freq[labels == recv].min(), freq[labels == recv].max()
        units = _donor_units(labels == donor, groups, freq, lo, hi)
        for unit in units:
            if need <= 0:
                break
            if len(unit) <= spare:
                labels[unit] = recv
                need, spare, moved = need - len(unit), spare - len(unit), moved + len(unit)
        if need > 0:  # every remaining unit is a correlated group too big to spare
            unit = next(u for u in units if labels[u[0]] == donor)
            gap = np.maximum(lo - freq[unit], freq[unit] - hi)
            take = unit[np.argsort(gap, kind="stable")[:min(need, spare)]]
            labels[take] = recv
            groups[take] = groups.max() + 1 + np.arange(len(take))
            moved, split = moved + len(take), split + 1
    return labels, moved, split


def _donor_units(in_donor: np.ndarray, groups: np.ndarray, freq: np.ndarray,
                 lo: float, hi: float) -> list[np.ndarray]:
    """The donor's groups: uncorrelated codes first, then nearest in frequency."""
    codes = np.flatnonzero(in_donor)
    ids, inv = np.unique(groups[codes], return_inverse=True)
    size = np.bincount(inv)
    mean = np.bincount(inv, weights=freq[codes]) / size
    gap = np.maximum(np.maximum(lo - mean, mean - hi), 0.0)
    order = np.lexsort((ids, gap, size > 1))
    by_unit = np.argsort(inv, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(size)])
    return [codes[by_unit[bounds[u]:bounds[u + 1]]] for u in order]


def theoretical_ratio(labels: np.ndarray, freq: np.ndarray) -> float:
    """Fig. 7's theoretical ratio: every code raised to its cluster's top
    frequency, over the real number of code occurrences."""
    n_cl = int(labels.max()) + 1
    top = np.zeros(n_cl, dtype=np.int64)
    np.maximum.at(top, labels, freq)
    return float(top[labels].sum() / freq.sum())


def _ordered_clusters(labels: np.ndarray, freq: np.ndarray, codes: np.ndarray) -> list[list[str]]:
    out = []
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        out.append((int(freq[members].max()), sorted(codes[members].tolist())))
    out.sort(key=lambda t: (t[0], t[1]))
    return [c for _, c in out]
