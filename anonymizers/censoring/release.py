"""The release of GCCens: fresh pseudonyms, the long table, the JSON document,
and the key that links pseudonyms to source ids (which is never released)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.pseudonyms import fresh


def pseudonymize(Y: sp.csr_matrix, codes: np.ndarray, original_ids: np.ndarray,
                 rng: np.random.Generator):
    """Give each record of ``Y`` a fresh pseudonym and sort by it.

    Returns (pseudonyms sorted, long table ``patient_id, code, count``, key
    ``patient_id, original_id``, the permutation from ``Y``'s row order to the
    sorted order).
    """
    names = fresh(Y.shape[0], rng)
    order = np.argsort(names, kind="stable")
    coo = Y.tocoo()
    records = pd.DataFrame({"patient_id": names[coo.row].astype(object),
                            "code": codes[coo.col].astype(object),
                            "count": coo.data.astype(np.int64)})
    records = records.sort_values(["patient_id", "code"], kind="stable",
                                  ignore_index=True)
    key = pd.DataFrame({"patient_id": names[order].astype(object),
                        "original_id": np.asarray(original_ids, dtype=object)[order]})
    return names[order], records, key, order


def release_document(result) -> dict:
    """The JSON release: ``k``, one ``{patient_id, codes}`` per record (empty
    records included), ``cul`` in the same order, final caps and metrics."""
    grouped = {p: dict(zip(g["code"], g["count"].tolist()))
               for p, g in result.records.groupby("patient_id", sort=False)}
    return {"k": result.metrics["k"],
            "records": [{"patient_id": p, "codes": grouped.get(p, {})}
                        for p in result.patients.tolist()],
            "cul": [float(x) for x in result.cul],
            "final_caps": dict(result.final_caps),
            "metrics": dict(result.metrics)}
