"""Checks and integer encoding of the ``patient_id, code`` input and of clusters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.errors import InputError
from anonymizers.io import check_no_nulls, require_columns
from anonymizers.records import Records, encode

COLUMNS = ["patient_id", "code"]


def encode_input(df: pd.DataFrame, source: str = "input") -> Records:
    """Records of a long table with one row per patient and code.

    Empty input is an error: there is no frequency to hide and no patient to
    copy, and an empty release would only hide a broken upstream step.
    """
    require_columns(df, source, COLUMNS)
    if len(df) == 0:
        raise InputError(source, "no rows: MedCo needs at least one patient with one code")
    check_no_nulls(df, source, COLUMNS)
    df = df[COLUMNS].assign(code=df["code"].astype(str))
    return encode(df, "patient_id", "code")


def check_clusters(clusters, codes: np.ndarray, source: str = "clusters") -> list[np.ndarray]:
    """Clusters as arrays of code strings: a partition covering every input code.

    Codes of a cluster that the input lacks are allowed (they start at
    frequency 0 and are filled like the others).
    """
    if not isinstance(clusters, (list, tuple)):
        raise InputError(source, "expected a list of clusters, each a list of code strings")
    out, seen = [], {}
    for i, cluster in enumerate(clusters):
        if not isinstance(cluster, (list, tuple)) or not cluster:
            raise InputError(source, f"cluster {i} must be a non-empty list of code strings")
        for code in cluster:
            if not isinstance(code, str):
                raise InputError(source, f"cluster {i}: code {code!r} is not a string "
                                 "(write codes as JSON strings, e.g. \"401\")")
            if code in seen:
                raise InputError(source, f"code {code!r} is in cluster {seen[code]} and "
                                 f"cluster {i}; each code must be in exactly one cluster")
            seen[code] = i
        out.append(np.array(sorted(cluster), dtype=object))
    absent = [c for c in codes.tolist() if c not in seen]
    if absent:
        raise InputError(source, f"{len(absent)} input code(s) are in no cluster, "
                         f"e.g. {absent[:5]}; every code must be in exactly one cluster")
    return out


def widen(records: Records, vocabulary: np.ndarray) -> Records:
    """The same records over a larger sorted vocabulary (a superset of its codes)."""
    cols = np.searchsorted(vocabulary, records.codes)
    m = records.matrix.tocoo()
    mat = sp.csr_matrix((m.data, (m.row, cols[m.col])),
                        shape=(records.n_records, len(vocabulary)))
    mat.sort_indices()
    return Records(records.patients, vocabulary, mat)
