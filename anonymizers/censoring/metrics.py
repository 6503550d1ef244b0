"""Censoring Utility Loss and the statistics of its distribution
(Tamersoy 2011, III.6 and Tables 1-2)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def cul(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """CUL of each record: censored instances / instances before censoring.

    III.6 defines CUL as "the number of censored ICD codes in a record s
    divided by the total number of ICD codes in s".  ``before`` and ``after``
    are the record sizes (instances, with repeats).  A record that was empty
    before has nothing to lose: its CUL is 0.
    """
    before = np.asarray(before, dtype=np.float64)
    after = np.asarray(after, dtype=np.float64)
    out = np.zeros(len(before))
    np.divide(before - after, before, out=out, where=before > 0)
    return out


def distribution(values: np.ndarray) -> dict[str, float | None]:
    """Mean, standard deviation, median and skewness, as Tables 1-2 report.

    The thesis names no estimator.  We report the sample standard deviation
    (ddof=1) and the adjusted Fisher-Pearson skewness G1 (``scipy.stats.skew``
    with ``bias=False``), the figures statistical packages print.  A figure
    that is undefined (no values; std with one value; skewness with fewer than
    three values or no spread) is None.
    """
    v = np.asarray(values, dtype=np.float64)
    out = {"mean": None, "std": None, "median": None, "skewness": None}
    if len(v) == 0:
        return out
    out["mean"] = float(v.mean())
    out["median"] = float(np.median(v))
    if len(v) >= 2:
        out["std"] = float(v.std(ddof=1))
    if len(v) >= 3 and v.max() > v.min():
        out["skewness"] = float(stats.skew(v, bias=False))
    return out


def risk(dis: np.ndarray, k: int) -> dict[str, float | int | None]:
    """Distinguishability figures of a set of records (III.4, Figure 2)."""
    dis = np.asarray(dis)
    if len(dis) == 0:
        return {"min_dis": None, "uniquely_identifiable": 0.0, "below_k": 0.0}
    return {"min_dis": int(dis.min()),
            "uniquely_identifiable": float((dis == 1).mean()),
            "below_k": float((dis < k).mean())}
