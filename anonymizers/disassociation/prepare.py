"""From the input table to what the algorithm works on: integer-encoded
records, the constraint of every code, and the sensitive-code mask.

Repeated codes (Section 7.1): "different instances of the same diagnosis code
in the dataset, and the utility constraints, are mapped to different values".
The paper's example appends the occurrence number to the code (250.01 ->
250.011); we put a separator in between, ``"250.01#1"``, so that the mapping
cannot collide with another code (``"25"`` + ``"11"`` vs ``"251"`` + ``"1"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.errors import InputError
from anonymizers.records import Records, encode

OCCURRENCE_SEP = "#"


@dataclass(frozen=True)
class Prepared:
    """``constraint[j]`` is the index of the utility constraint holding code
    ``j`` (-1: none); ``sensitive[j]`` marks the codes of Section 7.2."""

    records: Records
    constraint: np.ndarray
    sensitive: np.ndarray
    n_constraints: int


def split_occurrences(df: pd.DataFrame, patient_col: str = "patient_id",
                      code_col: str = "code") -> pd.DataFrame:
    """Section 7.1: the i-th row of a (patient, code) pair gets code ``code#i``
    (i from 1, in input order)."""
    out = df[[patient_col, code_col]].copy()
    nth = out.groupby([patient_col, code_col], sort=False).cumcount() + 1
    out[code_col] = out[code_col].astype(str) + OCCURRENCE_SEP + nth.astype(str)
    return out


def merge_occurrences(codes) -> np.ndarray:
    """Inverse of ``split_occurrences`` on code strings: ``"250#2"`` -> ``"250"``."""
    arr = np.asarray(codes, dtype=object)
    return np.array([c.rsplit(OCCURRENCE_SEP, 1)[0] for c in arr], dtype=object)


def check_input(df: pd.DataFrame, source: str = "records") -> pd.DataFrame:
    """The input must be a table with non-empty ``patient_id`` and ``code``."""
    if not isinstance(df, pd.DataFrame):
        raise InputError(source, f"expected a pandas DataFrame with columns patient_id, "
                         f"code; got {type(df).__name__}")
    missing = [c for c in ("patient_id", "code") if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])
    for col in ("patient_id", "code"):
        bad = df[col].isna().to_numpy()
        if bad.any():
            raise InputError(source, "empty value", row=int(bad.argmax()) + 1, field=col)
    codes = df["code"].astype(str)
    if (codes.str.len() == 0).any():
        row = int((codes.str.len() == 0).to_numpy().argmax()) + 1
        raise InputError(source, "empty code", row=row, field="code")
    return df


def prepare(df: pd.DataFrame, policy, sensitive_codes, repeated: bool) -> Prepared:
    """Encode ``df`` (columns patient_id, code) and map policy and sensitive
    codes onto the vocabulary."""
    df = check_input(df)
    df = df.assign(code=df["code"].astype(str))
    if repeated:
        df = split_occurrences(df)
    records = encode(df, "patient_id", "code")
    base = merge_occurrences(records.codes) if repeated else records.codes
    index = pd.Index(base)
    constraint = np.full(records.n_codes, -1, dtype=np.int64)
    for i, u in enumerate(policy or ()):
        constraint[index.isin(list(u))] = i
    sensitive = index.isin(list(sensitive_codes)) if len(records.codes) else \
        np.zeros(0, dtype=bool)
    return Prepared(records, constraint, np.asarray(sensitive, dtype=bool),
                    len(policy or ()))
