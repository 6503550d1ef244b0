"""Turn the final state of a UGACLIP run into the release tables (Definition 1:
every code mapped to one anonymized item or suppressed; every record rewritten)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.pseudonyms import fresh, generator
from anonymizers.records import Records
from anonymizers.ugaclip import metrics as m
from anonymizers.ugaclip.config import UGACLIPConfig, UGACLIPResult
from anonymizers.ugaclip.loss import SemanticWeights


def build_result(records: Records, run, utility, config: UGACLIPConfig,
                 weights: SemanticWeights) -> UGACLIPResult:
    state = run.state
    codes = records.codes
    groups = sorted((sorted(codes[mem].tolist()), rep) for rep, mem in state.members.items())
    item_of = np.full(state.n_codes, -1, dtype=np.int64)
    for item_id, (_, rep) in enumerate(groups):
        item_of[state.members[rep]] = item_id
    items = [tuple(g) for g, _ in groups]
    released = released_matrix(records, item_of, len(items))
    rng_ids, rng_queries = np.random.default_rng(config.seed).spawn(2)
    ids = fresh(records.n_records, generator(config.pseudonym_key, config.seed, rng_ids),
                prefix="R")
    coo = released.tocoo()
    record_items = pd.DataFrame({"patient_id": ids[coo.row], "item": coo.col.astype(np.int64)})
    record_items = record_items.sort_values(["patient_id", "item"], kind="stable")
    metrics = {
        "k": int(config.k), "n_records": int(records.n_records), "n_codes": int(state.n_codes),
        "n_items": len(items),
        "n_generalized_items": sum(len(i) > 1 for i in items),
        "largest_item": max((len(i) for i in items), default=0),
        **m.information_loss_report(items, released, weights, codes, state.n_codes,
                                    records.n_records),
        **m.suppression_report(records, item_of),
        "privacy_constraints": run.constraint_status(),
        "utility_constraints": m.utility_report(utility, codes, item_of, items),
        "relative_error": m.relative_error_report(records, released, item_of, items,
                                                  config, rng_queries),
        "unplaced_codes": weights.unplaced,
        "unplaced_weight": weights.fallback,
        "steps": dict(run.counts),
        "plan": _plan_report(run),
    }
    mapping = pd.DataFrame({"code": codes.astype(str), "item": item_of})
    return UGACLIPResult(config.k, items, sorted(codes[item_of < 0].tolist()), mapping,
                         np.sort(ids), record_items.reset_index(drop=True), metrics)


def released_matrix(records: Records, item_of: np.ndarray, n_items: int):
    """Records x items, 1 where a record holds any unsuppressed code of the item."""
    coo = records.matrix.tocoo()
    keep = item_of[coo.col] >= 0
    mat = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8),
                         (coo.row[keep], item_of[coo.col[keep]])),
                        shape=(records.n_records, n_items))
    mat.sum_duplicates()
    mat.data[:] = 1
    return mat


def _plan_report(run) -> dict | None:
    """What guided line 17 (or, ``realised``, was suppressed before line 1):
    the computed plan's figures (its codes left out), or the size of a plan
    given; None without a plan."""
    realised = {"realised": bool(getattr(run, "realise", False))}
    if run.plan_info is not None:
        return {k: v for k, v in run.plan_info.items() if k != "codes"} | realised
    n = int(run.plan[:run.state.n_codes].sum()) if hasattr(run, "plan") else 0
    return {"given": n} | realised if n else None
