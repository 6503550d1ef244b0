"""Marketer re-identification risk (El Emam et al. 2012, appendix section 6, equation (2)),
summed in log space.
Readings chosen and why: docs/methods/hhp.md#claims-marketer."""

from __future__ import annotations

import numpy as np

from anonymizers.errors import ParameterError


def marketer_risk(class_sizes, n: int | None = None) -> float:
    """theta_hat of equation (2) for population classes ``class_sizes`` and
    a sample of ``n`` records (default: the whole population, theta = |J|/N)."""
    F = np.asarray(class_sizes, dtype=np.int64).ravel()
    if (F < 0).any():
        raise ParameterError("class_sizes", "class sizes must be >= 0")
    F = F[F > 0]
    N = int(F.sum())
    n = N if n is None else int(n)
    if not 0 <= n <= N:
        raise ParameterError("n", f"the sample size must be in [0, {N}], got {n}")
    if N == 0:
        return 0.0
    i = np.arange(int(F.max()), dtype=np.float64)
    ratio = np.minimum(n / (N - i), 1.0)
    with np.errstate(divide="ignore"):
        log_terms = np.log1p(-ratio)
    log_p0 = np.r_[0.0, np.cumsum(log_terms)]          # log P(f_j = 0) for F_j = 0, 1, ...
    return float((1.0 - np.exp(log_p0[F])).sum() / N)


def scaled_population(sample_class_sizes, population: int) -> np.ndarray:
    """Population class sizes estimated from sample classes f_j as f_j / alpha,
    alpha = n / population (the derivation's f_j = alpha F_j), at least f_j."""
    f = np.asarray(sample_class_sizes, dtype=np.int64)
    n = int(f.sum())
    if population < n:
        raise ParameterError("marketer_population", f"must be at least the number of released "
                             f"members ({n}), got {population}")
    if n == 0:
        return f
    return np.maximum(f, np.rint(f * (population / n)).astype(np.int64))
