"""Truncation of claims per member (El Emam et al. 2012, appendix section 1): the nearest-rank
95th percentile of claims per member; highest support score kept first, ties to later claims.
Readings chosen and why: docs/methods/hhp.md#claims-truncation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError


def truncation_threshold(counts: np.ndarray, percentile: float = 95.0) -> int:
    """Nearest-rank ``percentile`` of the claims-per-member ``counts``."""
    if not 0 < percentile <= 100:
        raise ParameterError("truncation_percentile", f"must be in (0, 100], got {percentile}")
    counts = np.sort(np.asarray(counts, dtype=np.int64))
    if len(counts) == 0:
        return 0
    rank = max(1, math.ceil(percentile / 100.0 * len(counts) - 1e-9))
    return int(counts[rank - 1])


def support(member: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per claim: the number of members, other than the claim's own, holding
    the claim's label."""
    n_labels = int(labels.max()) + 1 if len(labels) else 0
    pairs = np.unique(member.astype(np.int64) * max(n_labels, 1) + labels)
    holders = np.bincount(pairs % max(n_labels, 1), minlength=n_labels)
    return holders[labels] - 1


def scores(member: np.ndarray, labels_per_qi: list[np.ndarray], n_members: int) -> np.ndarray:
    """The score s of every claim (section 1); 0 when there is no quasi-identifier."""
    if not labels_per_qi or n_members == 0:
        return np.zeros(len(member))
    low = np.min([support(member, lab) for lab in labels_per_qi], axis=0)
    return 1.0 - low / n_members


def removed_claims(member: np.ndarray, n_claims: np.ndarray, score: np.ndarray,
                   later: np.ndarray, threshold: int) -> np.ndarray:
    """Boolean per claim: truncated away.  ``member`` is the claim's member
    index; ``later`` ranks claims in time (larger = later) for ties."""
    over = n_claims[member] > threshold
    out = np.zeros(len(member), dtype=bool)
    idx = np.flatnonzero(over)
    if len(idx) == 0:
        return out
    order = idx[np.lexsort((-later[idx], -score[idx], member[idx]))]
    m = member[order]
    first = np.r_[0, np.flatnonzero(m[1:] != m[:-1]) + 1]
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    out[order[rank < n_claims[m] - threshold]] = True
    return out


def truncate_table(df: pd.DataFrame, member_col: str, qi_cols: list[str],
                   percentile: float = 95.0, time_col: str | None = None):
    """Truncation usable alone on a long table: returns (kept rows, threshold,
    score per row).  ``time_col`` orders ties (later first); default row order."""
    for col in [member_col, *qi_cols] + ([time_col] if time_col else []):
        if col not in df.columns:
            raise ParameterError("columns", f"no column {col!r} in the table")
    member, _ = pd.factorize(df[member_col])
    n_members = int(member.max()) + 1 if len(member) else 0
    labels = [pd.factorize(df[c], use_na_sentinel=False)[0] for c in qi_cols]
    s = scores(member, labels, n_members)
    later = (pd.factorize(df[time_col], sort=True)[0] * (len(df) + 1) + np.arange(len(df))
             if time_col else np.arange(len(df)))
    counts = np.bincount(member, minlength=n_members)
    t = truncation_threshold(counts, percentile)
    gone = removed_claims(member, counts, s, np.asarray(later, dtype=np.int64), t)
    return df.iloc[np.flatnonzero(~gone)], t, s
