"""The power of the adversary (El Emam et al. 2012, appendix section 4): Simpson-index diversity,
claim counts capped at mean + 2 sd, and equation (1)'s p_ih.
Readings chosen and why: docs/methods/hhp.md#claims-adversary."""

from __future__ import annotations

from collections import Counter

import numpy as np

ROUNDINGS = ("round", "ceil", "floor")


def simpson_index(values) -> float:
    """Simpson index D of one member's values (4.1); 1.0 for fewer than two."""
    n = np.array(list(Counter(values).values()), dtype=np.float64)
    total = n.sum()
    if total < 2:
        return 1.0
    return float((n * (n - 1)).sum() / (total * (total - 1)))


def member_simpson(entry_member: np.ndarray, entry_count: np.ndarray,
                   n_claims: np.ndarray) -> np.ndarray:
    """Simpson index per member from (member, value, count) entries, where
    ``n_claims[i]`` is the member's total (the N of 4.1)."""
    pairs = np.bincount(entry_member, weights=entry_count * (entry_count - 1.0),
                        minlength=len(n_claims))
    n = n_claims.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = pairs / (n * (n - 1.0))
    return np.where(n < 2, 1.0, d)


def eta_cap(n_claims: np.ndarray, n_sd: float = 2.0) -> float:
    """The cap of eta: mean plus ``n_sd`` standard deviations (ddof=0)."""
    if len(n_claims) == 0:
        return 0.0
    x = n_claims.astype(np.float64)
    return float(x.mean() + n_sd * x.std())


def adversary_power(eta: np.ndarray, diversity: np.ndarray, p_max: int,
                    rounding: str = "round") -> np.ndarray:
    """Equation (1): p per member (int), from the capped claim counts ``eta``
    and the diversities ``pi`` of one quasi-identifier."""
    eta = np.asarray(eta, dtype=np.float64)
    pi = np.asarray(diversity, dtype=np.float64)
    positive = pi > 0
    if not positive.any():
        return np.full(len(eta), p_max, dtype=np.int64)
    ratio = np.zeros(len(eta))
    # a Simpson diversity above 0 is at least 2 / N; the floor only keeps the
    # division finite for arbitrary callers
    ratio[positive] = eta[positive] / np.maximum(pi[positive], 1e-12)
    top = ratio[positive].max()
    ratio[~positive] = top
    p = (p_max - 1) * ratio / top + 1.0
    p = np.minimum(p, float(p_max))  # guards the float error of ratio / top at the max
    if rounding == "round":
        out = np.floor(p + 0.5)
    elif rounding == "ceil":
        out = np.ceil(p - 1e-12)
    else:
        out = np.floor(p + 1e-12)
    return out.astype(np.int64)
