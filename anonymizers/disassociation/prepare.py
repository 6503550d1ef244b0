"""From the input table to what the algorithm works on: integer-encoded records, each code's
constraint, the sensitive-code mask; repeated codes numbered as ``"250.01#1"`` (Section 7.1).
Readings chosen and why: docs/methods/disassociation.md#disassociation-prepare."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.errors import InputError, ParameterError
from anonymizers.io import check_no_nulls
from anonymizers.records import BatchEncoder, Records, encode

OCCURRENCE_SEP = "#"


class TooFewRecords(InputError):
    """The input holds fewer than ``k`` records (none at all included).

    No disassociated release of such an input keeps Guarantee 1: every
    cluster, and so every reconstruction, has fewer than ``k`` records, so no
    set of codes can be held by ``k`` of them.  An empty release would keep
    nothing and look like success, so DISASSOCIATION refuses the input."""

    def __init__(self, source: str, n_records: int, k: int):
        self.n_records, self.k = n_records, k
        super().__init__(source, f"{n_records} record(s), fewer than k = {k}: no "
                         "disassociated release of them can keep k^m-anonymity")


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


def check_input(df: pd.DataFrame, source: str = "records", first_row: int = 1) -> pd.DataFrame:
    """The input must be a table with non-empty ``patient_id`` and ``code``;
    ``df``'s first row is row ``first_row`` of ``source`` (a later batch of it)."""
    if not isinstance(df, pd.DataFrame):
        raise InputError(source, f"expected a pandas DataFrame with columns patient_id, "
                         f"code; got {type(df).__name__}")
    missing = [c for c in ("patient_id", "code") if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])
    check_no_nulls(df, source, ["patient_id", "code"], first_row)
    empty = (df["code"].astype(str).str.len() == 0).to_numpy()
    if empty.any():
        raise InputError(source, "empty code", row=int(empty.argmax()) + first_row,
                         field="code")
    return df


def prepare(df: pd.DataFrame, policy, sensitive_codes, repeated: bool) -> Prepared:
    """Encode ``df`` (columns patient_id, code) and map policy and sensitive
    codes onto the vocabulary."""
    df = check_input(df)
    df = df.assign(code=df["code"].astype(str))
    if repeated:
        df = split_occurrences(df)
    return _prepared(encode(df, "patient_id", "code"), policy, sensitive_codes, repeated)


def prepare_batches(batches: Iterable[pd.DataFrame], policy, sensitive_codes,
                    repeated: bool, source: str = "records") -> Prepared:
    """``prepare`` of the long table the row batches make up, in order, holding
    one batch at a time plus the integer encoding (``BatchEncoder``): the
    same Prepared as ``prepare(pd.concat(batches))``.

    Repeated codes are refused: numbering a code's occurrences needs all of a
    patient's rows at once, which batches of rows do not give.
    """
    if repeated:
        raise ParameterError("repeated_codes", "not available when the records come in "
                             "batches; pass the whole table to prepare()")
    encoder, offset = BatchEncoder(), 0
    for df in batches:
        check_input(df, source, first_row=offset + 1)
        encoder.add(df["patient_id"], df["code"])
        offset += len(df)
    return _prepared(encoder.finish()[0], policy, sensitive_codes, repeated)


def _prepared(records: Records, policy, sensitive_codes, repeated: bool) -> Prepared:
    base = merge_occurrences(records.codes) if repeated else records.codes
    index = pd.Index(base)
    # one look-up for all constraints (an isin per constraint cost seconds on 600 of them)
    owner = {c: i for i, u in enumerate(policy or ()) for c in u}
    constraint = np.fromiter((owner.get(c, -1) for c in index.tolist()), dtype=np.int64,
                             count=len(index))
    sensitive = index.isin(list(sensitive_codes)) if len(records.codes) else \
        np.zeros(0, dtype=bool)
    return Prepared(records, constraint, np.asarray(sensitive, dtype=bool),
                    len(policy or ()))
