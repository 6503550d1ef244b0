"""AHRQ's Clinical Classifications Software Refined (CCSR) for ICD-10-CM
diagnoses: the recoding groups of ICD-10-CM claims.

The HHP method recodes diagnoses into groups (primary condition groups,
sections 7-10 of the HHP paper); for ICD-10-CM the standard grouping is
HCUP's CCSR, which AHRQ maintains per fiscal year.  The mapping is kept as
versioned data in ``data/ccsr/`` (``VERSION``; SOURCES.md there gives its
origin): one row per (ICD-10-CM code, CCSR category) with AHRQ's default
flags for a principal inpatient diagnosis (``ip``) and a first-listed
outpatient diagnosis (``op``): ``Y`` the default, ``N`` another category,
``X`` the code cannot be principal / first-listed.

Readings chosen (AHRQ's user guide leaves the use to the analyst):

- ``categories(code)``: every category of the code, its default for the
  setting first, then the others in the file's order.  A code without a
  default (``X``: AHRQ assigns the placeholder ``XXX000``/``XXX111``) lists
  its real categories in the file's order; placeholders are never returned.
- ``groups`` / ``recode`` with ``how="default"`` give one group per code,
  the first of ``categories`` (so an ``X`` code takes its first listed
  category); ``how="all"`` keeps every category (CCSR is one-to-many).
- Codes are normalised by ``anonymizers.codesystems.normalize`` (dots,
  whitespace, case).  CCSR maps billable codes only; a header code
  (``E11``) or a code newer than the file's fiscal year is unknown.  An
  unknown code is ``UnknownCode`` (an ``InputError``) for ``categories``;
  for ``groups``/``recode`` it is an ``InputError`` naming the first such row
  (1-based, never the value), or ``None`` / dropped as the caller asks.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.codesystems import normalize
from anonymizers.errors import InputError, ParameterError

VERSION = "v2023_1"
DATA = Path(__file__).resolve().parent / "data" / "ccsr"
SETTINGS = ("ip", "op")
UNKNOWN = ("error", "none", "drop")


class UnknownCode(InputError):
    """A code the CCSR file does not map."""


@lru_cache(maxsize=1)
def mapping() -> pd.DataFrame:
    """The DXCCSR file: ``icd10cm, ccsr, default_ip, default_op`` (text)."""
    return pd.read_csv(DATA / f"dxccsr_{VERSION}_map.csv.gz", dtype=str,
                       keep_default_na=False)


@lru_cache(maxsize=1)
def descriptions() -> dict[str, str]:
    """CCSR category -> AHRQ's description (placeholders included)."""
    table = pd.read_csv(DATA / f"dxccsr_{VERSION}_categories.csv.gz", dtype=str,
                        keep_default_na=False)
    return dict(zip(table["ccsr"], table["description"]))


@lru_cache(maxsize=2)
def _table(setting: str) -> dict[str, tuple[str, ...]]:
    """code -> its categories, the setting's default first (module docstring)."""
    m = mapping()
    rank = np.where(m[f"default_{_setting(setting)}"].to_numpy() == "Y", 0, 1)
    order = np.lexsort((np.arange(len(m)), rank, m["icd10cm"].to_numpy()))
    codes, cats = m["icd10cm"].to_numpy()[order], m["ccsr"].to_numpy()[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return dict(zip(codes[starts], map(tuple, np.split(cats, starts[1:]))))


def _setting(setting: str) -> str:
    if setting not in SETTINGS:
        raise ParameterError("setting", f"must be one of {list(SETTINGS)} (inpatient "
                             f"principal or outpatient first-listed), got {setting!r}")
    return setting


def categories(code: str, setting: str = "ip") -> tuple[str, ...]:
    """The CCSR categories of one ICD-10-CM code, default first; UnknownCode
    if the file does not map it."""
    key = normalize([code])[0]
    found = _table(setting).get(key)
    if found is None:
        raise UnknownCode("ccsr", f"not an ICD-10-CM code of CCSR {VERSION} (CCSR maps "
                          "billable codes of its fiscal year)", field="code")
    return found


def default(code: str, setting: str = "ip") -> str | None:
    """AHRQ's default category of ``code`` for ``setting``, or None when the
    code cannot be a principal / first-listed diagnosis there (``X``)."""
    first = categories(code, setting)[0]
    return first if normalize([code])[0] in _with_default(setting) else None


@lru_cache(maxsize=2)
def _with_default(setting: str) -> frozenset:
    m = mapping()
    return frozenset(m.loc[m[f"default_{_setting(setting)}"] == "Y", "icd10cm"])


def groups(codes, setting: str = "ip", unknown: str = "error",
           source: str = "codes", field: str = "code") -> np.ndarray:
    """One CCSR category per code (the first of ``categories``), as an object
    array; ``''`` stays ``None``.  ``unknown``: ``error`` (InputError naming the
    first unknown row), ``none`` (None there)."""
    if unknown not in ("error", "none"):
        raise ParameterError("unknown", f"must be 'error' or 'none', got {unknown!r}")
    clean = normalize(codes)
    index, uniques = pd.factorize(pd.Series(clean, dtype=object))
    table = _table(setting)
    first = np.array([table[u][0] if u in table else None for u in uniques] + [None],
                     dtype=object)
    out = first[index] if len(index) else np.zeros(0, dtype=object)
    bad = pd.isna(out) & (clean != "")
    if unknown == "error" and bad.any():
        raise InputError(source, f"not an ICD-10-CM code of CCSR {VERSION}",
                         row=int(np.flatnonzero(bad)[0]) + 1, field=field)
    return out


def recode(claims: pd.DataFrame, column: str, how: str = "default", setting: str = "ip",
           unknown: str = "error", source: str = "claims", out: str = "ccsr") -> pd.DataFrame:
    """``claims`` with its ICD-10-CM diagnosis column ``column`` recoded to CCSR
    categories in a new column ``out`` (HHP-style recoding groups).

    how : ``default`` -- one category per row (``groups``);
          ``all`` -- one row per (row, category): rows are repeated, one-to-many.
    unknown : ``error`` -- InputError naming the first unknown row (1-based);
              ``none`` -- ``out`` is None there; ``drop`` -- such rows are left out.
    Empty codes stay empty (None) whatever ``unknown`` says.
    """
    if how not in ("default", "all"):
        raise ParameterError("how", f"must be 'default' or 'all', got {how!r}")
    if unknown not in UNKNOWN:
        raise ParameterError("unknown", f"must be one of {list(UNKNOWN)}, got {unknown!r}")
    if column not in claims.columns:
        raise InputError(source, "missing diagnosis column", field=column)
    first = groups(claims[column].to_numpy(dtype=object), setting,
                   "error" if unknown == "error" else "none", source, column)
    known = ~pd.isna(first) | (normalize(claims[column].to_numpy(dtype=object)) == "")
    frame = claims if unknown != "drop" else claims[known]
    if how == "default":
        values = first if unknown != "drop" else first[known]
        return frame.assign(**{out: pd.Series(values, index=frame.index, dtype=object)})
    table = _table(setting)
    cats = [table.get(c, (None,)) if c else (None,)
            for c in normalize(frame[column].to_numpy(dtype=object))]
    lengths = np.array([len(c) for c in cats], dtype=np.int64)
    long = frame.iloc[np.repeat(np.arange(len(frame)), lengths)]
    return long.assign(**{out: pd.Series([x for c in cats for x in c], index=long.index,
                                         dtype=object)})
