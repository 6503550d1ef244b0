"""The power of the adversary (El Emam et al. 2012, appendix section 4).

For member i and claim quasi-identifier h:

- the Simpson index of the member's values (4.1),
  ``D = sum_k n_k (n_k - 1) / (N (N - 1))``, with D = 1 when N = 1;
- the diversity ``pi_ih = 1 - D`` (4.2);
- ``eta_i``, the member's number of claims, capped at the mean plus two
  standard deviations over members (population standard deviation, ddof=0);
- equation (1): ``p_ih = [(p_m - 1) / max_i(eta_i / pi_ih) * eta_i / pi_ih + 1]``,
  the maximum taken over members with ``pi_ih > 0``; a member with
  ``pi_ih = 0`` gets the maximum ratio (so p = p_m), and when no member has
  diversity every p is p_m.

Readings chosen (the paper does not say):

- the bracket of equation (1) is rounding to the nearest integer, halves
  up (``HHPConfig.p_rounding`` offers 'ceil' and 'floor' too);
- 4.1's worked example prints ``3(2)/6(5)`` three times, which sums to 0.6,
  not the stated 0.27: the terms are ``3(2)/6(5) + 1(0)/6(5) + 2(1)/6(5)
  = 8/30 = 0.267``, the formula applied to n = (3, 1, 2).
"""

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
