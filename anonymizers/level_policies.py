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
    (``forward``: as a target, every alternative) or the backward one
    (``backward``).  Combination entries (an ICD-9 code that needs several
    ICD-10-CM codes, or the reverse) vote only for a code no other entry
    links: 115.05 (histoplasmosis with pneumonia) -> B39.x + J17 must not pull
    J17 away from 484.  A code with no link of its own takes those of the
    codes it prefixes (a category, as rule 4 of ``gem_forward`` maps header
    codes), else those of its longest prefix that has links, its own or its
    codes' (a code newer than the GEMs: D49.59 under D49.5).  Ties go to the node first in the tabular
    list's order (001-999, V, E).  Codes with no link at all join no group.
    Groups are named by their node; codes keep the spelling given."""
    links = _links(forward, backward)
    links["node"] = links["icd9"].map(_node_of(links["icd9"].unique(), level))
    links = links.dropna(subset=["node"])
    plain = links[~links["combination"]]
    best = {**_plurality(links[links["combination"]]), **_plurality(plain)}
    links = links.sort_values("icd10", kind="stable", ignore_index=True)
    listed = links["icd10"].to_numpy(dtype=str)
    given = pd.unique(pd.Series(list(codes), dtype=object).astype(str))
    groups: dict[str, list[str]] = {}
    for code, key in zip(given, normalize(given)):
        node = best.get(key) or _below(key, links, listed) or _above(key, best, links, listed)
        if node is not None:
            groups.setdefault(node, []).append(str(code))
    order = sorted(groups, key=_tabular)
    return UtilityPolicy.from_lists([groups[n] for n in order], order, f"icd9-level-{level}")


def _below(key: str, links: pd.DataFrame, listed: np.ndarray) -> str | None:
    """The plurality node of the codes ``key`` prefixes (``listed``: ``links``'
    ICD-10-CM codes, which are sorted by them)."""
    if not key:
        return None
    lo, hi = np.searchsorted(listed, [key, key + "\uffff"])
    if lo == hi:
        return None
    below = links.iloc[lo:hi]
    plain = below[~below["combination"]]
    return _plurality((plain if len(plain) else below).assign(icd10=key)).get(key)


def _above(key: str, best: dict[str, str], links: pd.DataFrame,
           listed: np.ndarray) -> str | None:
    """The node of ``key``'s longest prefix (3 characters at least) that is
    listed or prefixes listed codes (its siblings: a code newer than the GEMs)."""
    for n in range(len(key) - 1, 2, -1):
        node = best.get(key[:n]) or _below(key[:n], links, listed)
        if node is not None:
            return node
    return None


def _links(forward: pd.DataFrame, backward: pd.DataFrame | None) -> pd.DataFrame:
    """Distinct (icd10, icd9, combination) links of the GEMs (``no_map`` rows
    dropped), undotted; a pair linked both ways counts as plain if either is."""
    frames = [g[g["no_map"].astype(int) == 0][["icd10cm", "icd9cm", "combination"]]
              for g in (forward, backward) if g is not None]
    pairs = pd.concat(frames, ignore_index=True)
    out = pd.DataFrame({"icd10": normalize(pairs["icd10cm"].to_numpy(dtype=object)),
                        "icd9": normalize(pairs["icd9cm"].to_numpy(dtype=object)),
                        "combination": pairs["combination"].astype(int).to_numpy() == 1})
    out = out[(out["icd10"] != "") & (out["icd9"] != "")]
    out = out.groupby(["icd10", "icd9"], as_index=False)["combination"].min()
    return out


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
