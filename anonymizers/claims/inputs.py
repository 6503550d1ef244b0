"""Validation and normalization of the claims table (the format is defined in
the package docstring, ``anonymizers.claims``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.claims.codes import place_of_service, undotted
from anonymizers.errors import InputError
from anonymizers.io import require_columns

REQUIRED = ("member_id", "claim_id", "service_date", "age_at_service", "sex", "dx_code")
OPTIONAL = ("other_dx_codes", "procedure_code", "place_of_service", "specialty",
            "length_of_stay", "birth_date")
NOT_EMPTY = ("member_id", "claim_id", "service_date", "age_at_service", "sex")
SEX = {"1": "M", "M": "M", "MALE": "M", "2": "F", "F": "F", "FEMALE": "F"}
# optional input column -> the claim quasi-identifier it feeds
QI_COLUMNS = {"procedure_code": "procedure", "place_of_service": "place_of_service",
              "specialty": "specialty", "length_of_stay": "length_of_stay"}


def normalize(df: pd.DataFrame, source: str = "claims") -> tuple[pd.DataFrame, set[str]]:
    """The claims as the method works on them, and the optional columns that
    hold at least one value.

    Columns out: ``row`` (0-based input position), ``member_id``,
    ``claim_id`` (str), ``date`` and ``birth`` (datetime64[s], ``birth`` NaT
    when unknown), ``age``, ``los`` (int64), ``sex`` ('M'/'F'), ``dx``,
    ``procedure``, ``place_of_service``, ``specialty`` (undotted upper-case
    str, '' when empty) and ``other_dx`` (list-like str, '' when empty).
    """
    require_columns(df, source, REQUIRED)
    for col in NOT_EMPTY:
        _no_empty(df[col], source, col)
    n = len(df)
    present = {c for c in OPTIONAL if c in df.columns and _has_values(df[c])}
    out = pd.DataFrame({
        "row": np.arange(n, dtype=np.int64),
        "member_id": _ids(df["member_id"]),
        "claim_id": _ids(df["claim_id"]),
        "date": _dates(df["service_date"], source, "service_date", required=True),
        "age": _integers(df["age_at_service"], source, "age_at_service", empty_as=None),
        "sex": _sex(df["sex"], source),
        "dx": undotted(df["dx_code"]),
    })
    _one_sex_per_member(out, source)
    out["other_dx"] = _optional_codes(df, "other_dx_codes", n)
    out["procedure"] = _optional_codes(df, "procedure_code", n)
    out["place_of_service"] = (place_of_service(df["place_of_service"].to_numpy())
                               if "place_of_service" in df.columns else _empty(n))
    out["specialty"] = _optional_codes(df, "specialty", n)
    out["los"] = (_integers(df["length_of_stay"], source, "length_of_stay", empty_as=0)
                  if "length_of_stay" in df.columns else np.zeros(n, dtype=np.int64))
    out["birth"] = (_dates(df["birth_date"], source, "birth_date", required=False)
                    if "birth_date" in df.columns else np.full(n, np.datetime64("NaT"), "M8[s]"))
    return out, present


def _one_sex_per_member(out: pd.DataFrame, source: str) -> None:
    first = out.groupby("member_id", sort=False)["sex"].transform("first").to_numpy()
    bad = first != out["sex"].to_numpy()
    if bad.any():
        i = int(bad.argmax())
        raise InputError(source, "a member's claims disagree on sex", row=i + 1, field="sex")


def _empty(n: int) -> np.ndarray:
    return np.full(n, "", dtype=object)


def _optional_codes(df, col, n) -> np.ndarray:
    return undotted(df[col]) if col in df.columns else _empty(n)


def _is_empty(s: pd.Series) -> np.ndarray:
    empty = s.isna().to_numpy().copy()
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        empty |= s.astype(str).str.strip().eq("").to_numpy() & ~empty
    return empty


def _has_values(s: pd.Series) -> bool:
    return bool(len(s)) and not _is_empty(s).all()


def _no_empty(s: pd.Series, source: str, col: str) -> None:
    bad = _is_empty(s)
    if bad.any():
        raise InputError(source, "empty value", row=int(bad.argmax()) + 1, field=col)


def _ids(s: pd.Series):
    """Stripped text, kept in pandas' string dtype (the frame's column is that
    dtype either way): an object array held a Python string per row, 250 MB
    per id column at 2.7 million claims."""
    return s.astype(str).str.strip().array


def _dates(s: pd.Series, source: str, col: str, required: bool) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        parsed = pd.to_datetime(s)
    else:
        text = s.astype("string").str.strip()
        compact = text.str.fullmatch(r"\d{8}").fillna(False)
        iso = pd.to_datetime(text.where(~compact), format="ISO8601", errors="coerce")
        short = pd.to_datetime(text.where(compact), format="%Y%m%d", errors="coerce")
        parsed = iso.where(~compact, short)
        given = ~_is_empty(s)
        bad = given & parsed.isna().to_numpy()
        if bad.any():
            raise InputError(source, f"not a date (YYYYMMDD or YYYY-MM-DD): "
                             f"{s.iloc[int(bad.argmax())]!r}", row=int(bad.argmax()) + 1,
                             field=col)
    if getattr(parsed.dt, "tz", None) is not None:
        parsed = parsed.dt.tz_localize(None)
    return parsed.dt.floor("D").to_numpy().astype("M8[s]")


def _integers(s: pd.Series, source: str, col: str, empty_as) -> np.ndarray:
    empty = _is_empty(s)
    num = pd.to_numeric(s.where(~empty), errors="coerce").to_numpy(dtype=float)
    bad = (~empty & (np.isnan(num) | (num < 0) | (num != np.floor(num))))
    if bad.any():
        i = int(bad.argmax())
        raise InputError(source, "must be a whole number >= 0", row=i + 1, field=col)
    return np.where(empty, 0 if empty_as is None else empty_as, num).astype(np.int64)


def _sex(s: pd.Series, source: str) -> np.ndarray:
    idx, uniques = pd.factorize(s.astype(str).str.strip().str.upper())
    mapped = np.array([SEX.get(u, "") for u in uniques], dtype=object)
    out = mapped[idx]
    bad = out == ""
    if bad.any():
        i = int(bad.argmax())
        raise InputError(source, "sex must be 1/2 or M/F", row=i + 1, field="sex")
    return out
