"""Diagnosis code forms, so that the IL weight (Definition 2) is computed for
every code a claim can carry rather than read as zero; ICD-9-CM (the
default) or ICD-10-CM (``code_system="icd10cm"``, ``anonymizers.codesystems``).

Claims write codes without the dot ('25000', 'V1005', 'E8889'; 'S52521A');
the paper's tables write them with it ('250.00', 'V10.05', 'E888.9';
ICD-10-CM's tabular list 'S52.521A').  ``dotted`` turns the first form into
the second (ICD-9: the dot follows the 3-character category, 4 for E codes;
ICD-10: always the 3-character category, so ICD-10's E11.9 is not ICD-9's
E-code form); ``place`` finds the node of the code system's tree a code
stands for, in either form, falling back to its deepest prefix (at least the
category) that is a node: DE-SynPUF carries retired or non-billable codes
such as '0421' (HIV with specified infections, folded into 042 in 1994) and
'71970', which CMS v32 no longer lists; they are placed under their category
('042', '7197').  An ICD-10-CM code the tree does not list (deleted since
its fiscal year, or a local extension such as 'Z99999') goes under its
deepest listed prefix ('Z99') the same way.  A code
of neither shape ('OTHER', 'XX000', MEPS's '-1') is placed only if it is a
node itself (a chapter or block label); otherwise ``place`` returns None and
the caller must say so (see ``loss.SemanticWeights``).

The code system of a call is its ``code_system`` argument, else the tree's
own (``Hierarchy.code_system``, set by ``anonymizers.hierarchy.for_system``),
else ICD-9-CM.
"""

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
