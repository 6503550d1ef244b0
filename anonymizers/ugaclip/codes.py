"""Diagnosis code forms (dotted, undotted, retired) placed in the code system's tree, so that the
IL weight (SI Definition 2) is computed for every code a claim can carry; ICD-9-CM or ICD-10-CM.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-codes."""

from __future__ import annotations

import re

from anonymizers.codesystems import ICD9CM, ICD10CM, check_system
from anonymizers.errors import ParameterError

_NUMERIC = re.compile(r"^\d{3,5}$")
_V = re.compile(r"^V\d{2,4}$")
_E = re.compile(r"^E\d{3,4}$")
# ICD-10-CM: a letter, a digit, then 1-5 digits or letters (placeholder X, 7th characters)
_ICD10 = re.compile(r"^[A-Z]\d[0-9A-Z]{1,5}$")


def system_of(hierarchy=None, code_system: str | None = None) -> str:
    """The code system a call works in: ``code_system`` if given, else the
    tree's, else ICD-9-CM.  ParameterError if the two are given and differ."""
    own = getattr(hierarchy, "code_system", None)
    if code_system is None:
        return own or ICD9CM
    check_system(code_system)
    if own is not None and own != code_system:
        raise ParameterError("code_system", f"{code_system!r} codes on the {own!r} tree")
    return code_system


def _is_icd9(c: str) -> bool:
    return bool(_NUMERIC.match(c) or _V.match(c) or _E.match(c))


def dotted(code: str, code_system: str = ICD9CM) -> str:
    """ICD-9-CM: '25000' -> '250.00', 'V1005' -> 'V10.05', 'E8889' -> 'E888.9';
    ICD-10-CM: 'S52521A' -> 'S52.521A', 'e119' -> 'E11.9'.  Codes already
    dotted, 3-character categories and strings of neither shape unchanged
    (a dotted code is upper-cased and stripped)."""
    c = str(code).strip().upper()
    if "." in c:
        return c
    if check_system(code_system) == ICD10CM:
        if not _ICD10.match(c):
            return str(code)
        return c if len(c) == 3 else f"{c[:3]}.{c[3:]}"
    head = 4 if _E.match(c) else 3
    if _is_icd9(c):
        return c if len(c) == head else f"{c[:head]}.{c[head:]}"
    return str(code)


def place(code: str, hierarchy, code_system: str | None = None) -> str | None:
    """The hierarchy node of ``code`` (dotted or not), or of its deepest
    prefix (at least the 3-character category, 4 for ICD-9 E codes) that is
    a node; None if none is."""
    system = system_of(hierarchy, code_system)
    c = dotted(code, system).replace(".", "")
    if system == ICD10CM:
        shaped, head = bool(_ICD10.match(c)), 3
    else:
        shaped, head = _is_icd9(c), 4 if c.startswith("E") else 3
    if not shaped:
        return hierarchy.node(code) if code in hierarchy else None
    for end in range(len(c), head - 1, -1):
        if c[:end] in hierarchy:
            return hierarchy.node(c[:end])
    return None
