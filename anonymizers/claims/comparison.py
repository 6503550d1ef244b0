"""Excluded versus remaining members (El Emam et al. 2012, appendix section 3,
Tables 1-4): the distributions of sex, DSFC, age, LOS and claims per member,
each with a two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``).

Units, as in the tables: sex and age (at the member's first claim) and
claims per member are per member; DSFC (days since the member's first
claim) and LOS (claims with a stay of at least one day) are per claim.  The
paper tests DSFC, age and LOS; the test is reported for all five (for sex,
coded 0/1, the KS statistic is the difference of the proportions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DAY = np.timedelta64(1, "D")
# lower edges of the paper's table rows; the last row is open
DSFC_EDGES = [30 * m for m in range(13)]            # Table 2: 0-1 month .. 11-12, 12+
AGE_EDGES = [10 * d for d in range(9)]              # Table 3: 0-9 .. 70-79, 80+
LOS_EDGES = [1, 2, 3, 4, 5, 6, 7, 14, 28, 56, 84, 182]  # Table 4: 1 day .. 26+ weeks
LOS_LABELS = ["1 day", "2 days", "3 days", "4 days", "5 days", "6 days", "1-2 weeks",
              "2-4 weeks", "4-8 weeks", "8-12 weeks", "12-26 weeks", "26+ weeks"]


def compare_excluded(norm: pd.DataFrame, excluded_claim: np.ndarray) -> dict:
    """Tables 1-4 and the KS tests for the members whose claims are flagged in
    ``excluded_claim`` (one bool per row of ``norm``) against the others."""
    member, _ = pd.factorize(norm["member_id"])
    n_members = int(member.max()) + 1 if len(member) else 0
    first = np.full(n_members, np.datetime64("NaT"), dtype="M8[s]")
    order = np.lexsort((norm["row"].to_numpy(), norm["date"].to_numpy(), member))
    m_sorted = member[order]
    head = np.r_[True, m_sorted[1:] != m_sorted[:-1]] if len(order) else np.array([], bool)
    first[m_sorted[head]] = norm["date"].to_numpy()[order][head]
    age = np.zeros(n_members, dtype=np.int64)
    age[m_sorted[head]] = norm["age"].to_numpy()[order][head]
    sex = np.zeros(n_members, dtype=np.int64)
    female = norm["sex"].eq("F").to_numpy(dtype=bool)  # no Python string per row
    sex[m_sorted[head]] = female[order][head].astype(np.int64)
    excluded_m = np.zeros(n_members, dtype=bool)
    excluded_m[member[excluded_claim]] = True
    dsfc = ((norm["date"].to_numpy() - first[member]) // DAY).astype(np.int64)
    los = norm["los"].to_numpy()
    counts = np.bincount(member, minlength=n_members)
    ex_c, los_pos = excluded_m[member], los >= 1
    return {
        "excluded_members": int(excluded_m.sum()),
        "remaining_members": int((~excluded_m).sum()),
        "sex": _compare(sex[excluded_m], sex[~excluded_m], None, ["Male", "Female"]),
        "dsfc": _compare(dsfc[ex_c], dsfc[~ex_c], DSFC_EDGES,
                         [f"{m}-{m + 1} months" for m in range(12)] + ["12+ months"]),
        "age": _compare(age[excluded_m], age[~excluded_m], AGE_EDGES,
                        [f"{a}-{a + 9}" for a in AGE_EDGES[:-1]] + ["80+"]),
        "los": _compare(los[ex_c & los_pos], los[~ex_c & los_pos], LOS_EDGES, LOS_LABELS),
        "claims_per_member": _compare(counts[excluded_m], counts[~excluded_m], None, None),
    }


def _compare(excluded: np.ndarray, remaining: np.ndarray, edges, labels) -> dict:
    out: dict = {"n_excluded": len(excluded), "n_remaining": len(remaining),
                 "median_excluded": _median(excluded), "median_remaining": _median(remaining)}
    if labels is not None:
        out["table"] = [{"value": lab, "excluded_pct": e, "remaining_pct": r}
                        for lab, e, r in zip(labels, _percent(excluded, edges, len(labels)),
                                             _percent(remaining, edges, len(labels)))]
    if len(excluded) and len(remaining):
        # imported here: scipy.stats costs 0.7 s of CPU, which every screening task paid
        # for a comparison it does not make (compare=False)
        from scipy.stats import ks_2samp

        res = ks_2samp(excluded, remaining)
        out["ks"] = {"statistic": float(res.statistic), "pvalue": float(res.pvalue)}
    else:
        out["ks"] = {"statistic": None, "pvalue": None,
                     "note": "a group is empty: no test"}
    return out


def _median(x: np.ndarray):
    return float(np.median(x)) if len(x) else None


def _percent(x: np.ndarray, edges, n_rows: int) -> list:
    if not len(x):
        return [None] * n_rows
    row = x if edges is None else np.searchsorted(np.asarray(edges), x, side="right") - 1
    counts = np.bincount(row[row >= 0], minlength=n_rows)[:n_rows]
    return [round(100.0 * c / len(x), 2) for c in counts]
