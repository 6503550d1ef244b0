"""Quality figures of a UGACLIP release (Loukides et al., PNAS 2010, SI): IL (Definition 2),
suppressions as in Fig. S1, utility constraints satisfied, and RE of COUNT queries.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-metrics."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from anonymizers.records import Records
from anonymizers.ugaclip.loss import information_loss, log10_information_loss


def information_loss_report(items, released: sp.csr_matrix, weights, codes, n_codes: int,
                            n_records: int) -> dict:
    """IL of every generalized item and in total.  ``il_log10_total`` is
    always given when an item is generalized; ``il`` / ``il_total`` are None
    where the float underflows (see ``loss``), never a false 0.0.  Items of
    one code lose nothing (w = 0) and are not listed."""
    index = {c: i for i, c in enumerate(codes)}
    support = np.asarray(released.sum(axis=0)).ravel()
    rows, logs = [], []
    for item_id, item in enumerate(items):
        if len(item) < 2:
            continue
        w = weights.weight([index[c] for c in item])
        sup = int(support[item_id])
        il = information_loss(len(item), w, sup, n_codes, n_records)
        log10 = log10_information_loss(len(item), w, sup, n_codes, n_records)
        logs.append(log10)
        rows.append({"item": list(item), "weight": w, "support": sup,
                     "il": il if il > 0 or log10 == -np.inf else None, "log10_il": log10})
    log_total = float(np.logaddexp.reduce(np.array(logs) * np.log(10)) / np.log(10)) if logs else None
    if log_total is None:
        total = 0.0
    else:
        total = 10.0 ** log_total
        total = total if total > 0 or log_total == -np.inf else None
    return {"il_total": total, "il_log10_total": log_total, "il_items": rows}


def suppression_report(records: Records, item_of: np.ndarray) -> dict:
    suppressed = item_of < 0
    return {"suppressed_codes": int(suppressed.sum()),
            "suppressed_occurrences": int(records.support()[suppressed].sum())}


def utility_report(policy, codes, item_of: np.ndarray, items) -> dict:
    index = {c: i for i, c in enumerate(codes)}
    satisfied, unsatisfied, absent = [], [], []
    for name, u in zip(policy.names, policy.constraints):
        idx = [index[c] for c in u if c in index]
        if not idx:
            absent.append(name)
            continue
        ok = all(item_of[i] >= 0 and set(items[item_of[i]]) <= set(u) for i in idx)
        (satisfied if ok else unsatisfied).append(name)
    grouped = {c for u in policy.constraints for c in u}
    return {"n_constraints": len(policy.constraints), "n_present": len(satisfied) + len(unsatisfied),
            "n_satisfied": len(satisfied), "unsatisfied": unsatisfied, "absent": absent,
            # codes no constraint holds: one implicit constraint (docs/methods/ugaclip.md)
            "codes_in_no_constraint": sum(c not in grouped for c in codes)}


def relative_error_report(records: Records, released, item_of, items, config, rng) -> dict:
    out = {}
    if config.re_queries == 0:
        return out
    for q in config.re_query_sizes:
        queries = sample_queries(records, q, config.re_queries, rng)
        if not queries:
            out[f"q{q}"] = {"n": 0}
            continue
        re = relative_errors(records, released, item_of, items, queries)
        out[f"q{q}"] = {"n": len(re), "mean": float(re.mean()), "sd": float(re.std())}
    return out


def sample_queries(records: Records, q: int, n: int, rng: np.random.Generator) -> list:
    """``n`` sets of q code indices, each drawn from a random record of >= q codes."""
    sizes = np.diff(records.matrix.indptr)
    eligible = np.flatnonzero(sizes >= q)
    if eligible.size == 0:
        return []
    rows = eligible[rng.integers(0, eligible.size, size=n)]
    return [np.sort(rng.choice(records.record(r), size=q, replace=False)) for r in rows]


def relative_errors(records: Records, released, item_of, items, queries) -> np.ndarray:
    """RE(Q) for each query (array of code indices) as the SI defines it."""
    orig = records.matrix.tocsc()
    rel = released.tocsc()
    out = np.empty(len(queries))
    for n, query in enumerate(queries):
        actual = _holding(orig, query)
        mapped = item_of[query]
        if (mapped < 0).any():
            out[n] = 1.0
            continue
        ids, per_item = np.unique(mapped, return_counts=True)
        prob = 1.0
        for item_id, j in zip(ids, per_item):  # 2^(s-j) / (2^s - 1), overflow-free
            prob *= 2.0 ** -int(j) / -np.expm1(-len(items[item_id]) * np.log(2))
        estimate = _holding(rel, ids) * prob
        out[n] = abs(actual - estimate) / actual
    return out


def _holding(csc: sp.csc_matrix, cols) -> int:
    """Number of rows holding every column of ``cols``."""
    rows = None
    for c in cols:
        col = csc.indices[csc.indptr[c]:csc.indptr[c + 1]]
        rows = col if rows is None else np.intersect1d(rows, col, assume_unique=True)
    return 0 if rows is None else len(rows)
