"""Hierarchy-level utility policies by name: ``icd9-level-1/2/3`` and
``icd10-level-1/2/3`` (``anonymizers.policies``), for ``ugaclip`` and
``disassociate`` on the command line and in release files.

A level of the data's own code system groups the data's codes.  ICD-9-CM's
levels also apply to ICD-10-CM data through CMS's GEMs (``carried_level``), so
a custodian moving to ICD-10-CM can keep the diseases its ICD-9 analyses
grouped (docs/methods/ugaclip.md#ugaclip-policy)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from anonymizers.codesystems import (
    BACKWARD_GEM,
    FORWARD_GEM,
    ICD9CM,
    NAMES,
    REPOSITORY,
    normalize,
)
from anonymizers.errors import ParameterError
from anonymizers.io import GEM_COLUMNS, read_gem, read_table
from anonymizers.policies import hierarchy_groups, hierarchy_policy, named_level
from anonymizers.ugaclip.policy import UtilityPolicy


def level_policy(name: str, codes, code_system: str, gem: str | None,
                 how: str = f"give --gem (CMS's GEM ships as {FORWARD_GEM})") -> list | None:
    """The level policy ``name`` over the data's ``codes`` (None: ``name`` is
    not a level): the data's system's own level, or ICD-9-CM's carried into
    ICD-10-CM through the forward GEM file ``gem`` and the shipped backward
    one.  ``how``: what the refusal of an ICD-9 level without a GEM tells the
    user to do."""
    named = named_level(name)
    if named is None:
        return None
    system, level = named
    if system == code_system:
        return hierarchy_policy(codes, level, code_system=code_system)
    if system != ICD9CM or not gem:
        carry = f", or {how} to carry it into ICD-10-CM" if system == ICD9CM else ""
        raise ParameterError("utility_policy", f"{name} groups {NAMES[system]} codes; the "
                             f"data's are {NAMES[code_system]}: use "
                             f"{code_system[:-2]}-level-{level}{carry}")
    backward = read_table(REPOSITORY / BACKWARD_GEM, GEM_COLUMNS)
    policy = carried_level(level, codes, read_gem(gem), backward)
    return [list(u) for u in policy.constraints]


def carried_level(level: int, codes: Iterable[str], forward: pd.DataFrame,
                  backward: pd.DataFrame | None = None) -> UtilityPolicy:
    """ICD-9-CM's level-``level`` groups over the ICD-10-CM ``codes``
    (docs/methods/ugaclip.md#ugaclip-policy): each code joins the ICD-9-CM
    category (level 1), section (2) or chapter (3) that most of its GEM links
    lead to, counting distinct ICD-9-CM codes linked to it by the forward GEM
    (``forward``, as a target, every alternative) or the backward one
    (``backward``).  A code with no link of its own (a category or
    subcategory, as rule 4 of ``gem_forward`` maps header codes) takes the
    links of the codes it prefixes.  Ties go to the node first in the
    tabular list's order (001-999, V, E).  Codes with no link at all join no
    group.  Groups are named by their node; codes keep the spelling given."""
    links = _links(forward, backward)
    links["node"] = links["icd9"].map(_node_of(links["icd9"].unique(), level))
    links = links.dropna(subset=["node"])
    best = _plurality(links)
    given = pd.unique(pd.Series(list(codes), dtype=object).astype(str))
    groups: dict[str, list[str]] = {}
    for code, key in zip(given, normalize(given)):
        node = best.get(key)
        if node is None and key:  # a category or subcategory: the codes it prefixes
            below = links[links["icd10"].str.startswith(key)]
            node = _plurality(below.assign(icd10=key)).get(key) if len(below) else None
        if node is not None:
            groups.setdefault(node, []).append(str(code))
    order = sorted(groups, key=_tabular)
    return UtilityPolicy.from_lists([groups[n] for n in order], order, f"icd9-level-{level}")


def _links(forward: pd.DataFrame, backward: pd.DataFrame | None) -> pd.DataFrame:
    """Distinct (icd10, icd9) pairs the GEMs link (``no_map`` rows dropped),
    undotted."""
    frames = [g[g["no_map"].astype(int) == 0][["icd10cm", "icd9cm"]]
              for g in (forward, backward) if g is not None]
    pairs = pd.concat(frames, ignore_index=True)
    out = pd.DataFrame({"icd10": normalize(pairs["icd10cm"].to_numpy(dtype=object)),
                        "icd9": normalize(pairs["icd9cm"].to_numpy(dtype=object))})
    return out[(out["icd10"] != "") & (out["icd9"] != "")].drop_duplicates(ignore_index=True)


def _node_of(icd9: np.ndarray, level: int) -> dict[str, str]:
    """ICD-9-CM code -> the node that groups it at ``level``."""
    return {c: node for node, members in hierarchy_groups(icd9, level,
                                                          code_system=ICD9CM).items()
            for c in members}


def _plurality(links: pd.DataFrame) -> dict[str, str]:
    """ICD-10-CM code -> the node most of its distinct ICD-9-CM links lead to
    (ties: ``_tabular`` order)."""
    votes = (links.drop_duplicates(["icd10", "icd9"]).groupby(["icd10", "node"]).size()
             .rename("votes").reset_index())
    votes["rank"] = votes["node"].map(_tabular)
    votes = votes.sort_values(["icd10", "votes", "rank"], ascending=[True, False, True])
    first = votes.drop_duplicates("icd10")
    return dict(zip(first["icd10"], first["node"]))


def _tabular(node: str) -> tuple[int, str]:
    """The ICD-9-CM tabular list's order: 001-999, then V codes, then E codes."""
    return ("VE".find(node[0]) + 1, node)
