"""Trajectories (Tamersoy 2011, IV.2.2): per patient, the (ICD, Age) pairs ordered by age, then
service date (when given), then code; held as flat arrays with CSR-style offsets.
Readings chosen and why: docs/methods/lda.md#longitudinal-trajectories."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.errors import InputError
from anonymizers.io import check_no_nulls

REQUIRED = ["patient_id", "code", "age"]
OPTIONAL = ["service_date"]


@dataclass(frozen=True)
class Trajectories:
    """Ordered (code, age) pairs of ``n`` patients.

    ``codes[offsets[i]:offsets[i+1]]`` and the same slice of ``ages`` are the
    trajectory of ``patients[i]`` (patients in order of first appearance).
    """

    patients: np.ndarray
    offsets: np.ndarray
    codes: np.ndarray
    ages: np.ndarray

    @property
    def n(self) -> int:
        return len(self.patients)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def owner(self) -> np.ndarray:
        """Patient index of every flat pair."""
        return np.repeat(np.arange(self.n), self.lengths)


def build_trajectories(df: pd.DataFrame, source: str = "pairs") -> Trajectories:
    """Validate a ``patient_id,code,age[,service_date]`` table and order it.

    Raises InputError naming the row and field for a missing column, an empty
    value, an age that is not a whole number, or an unreadable service date.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])
    df = df.reset_index(drop=True)
    check_no_nulls(df, source, REQUIRED)
    ages = _whole_numbers(df["age"], source)
    codes = df["code"].astype(str).str.strip().to_numpy(dtype=object)
    pidx, patients = pd.factorize(df["patient_id"], sort=False)
    code_rank = pd.factorize(pd.Series(codes), sort=True)[0]
    keys = [code_rank]
    if "service_date" in df.columns:
        keys.append(_dates(df["service_date"], source))
    order = np.lexsort(keys + [ages, pidx])
    counts = np.bincount(pidx, minlength=len(patients))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Trajectories(np.asarray(patients, dtype=object), offsets,
                        codes[order], ages[order])


def _whole_numbers(col: pd.Series, source: str) -> np.ndarray:
    num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(num) | (num != np.round(num))
    if bad.any():
        row = int(bad.argmax())
        raise InputError(source, "the age is not a whole number",
                         row=row + 1, field="age")
    return num.astype(np.int64)


def _dates(col: pd.Series, source: str) -> np.ndarray:
    filled = col.fillna("").astype(str).str.strip()
    given = filled.where(filled != "", None)
    parsed = pd.to_datetime(given, errors="coerce")
    retry = (parsed.isna() & (filled != "")).to_numpy()
    if retry.any():  # the column mixes formats (2008-01-02, 20080102): one value at a time
        parsed[retry] = pd.to_datetime(given[retry], errors="coerce", format="mixed")
    bad = (parsed.isna() & (filled != "")).to_numpy()
    if bad.any():
        row = int(bad.argmax())
        raise InputError(source, "the service date is not a date",
                         row=row + 1, field="service_date")
    # an empty date sorts first among the pairs of the same age
    return parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
