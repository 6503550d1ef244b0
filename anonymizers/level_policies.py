"""Hierarchy-level utility policies by name: ``icd9-level-1/2/3`` and
``icd10-level-1/2/3`` (``anonymizers.policies``), for ``ugaclip`` and
``disassociate`` on the command line and in release files.

A level of the data's own code system groups the data's codes.  ICD-9-CM's
levels also apply to ICD-10-CM data through CMS's GEM: the ICD-9 groups are
carried into ICD-10-CM codes (``carried_level``), so a custodian moving to
ICD-10-CM can keep the diseases its ICD-9 analyses grouped
(docs/methods/ugaclip.md#ugaclip-policy)."""

from __future__ import annotations

from anonymizers.codesystems import FORWARD_GEM, ICD9CM, ICD10CM, NAMES, gem_forward
from anonymizers.errors import ParameterError
from anonymizers.io import read_gem
from anonymizers.policies import hierarchy_groups, hierarchy_policy, named_level
from anonymizers.ugaclip.policy import UtilityPolicy


def level_policy(name: str, codes, code_system: str, gem: str | None,
                 how: str = f"give --gem (CMS's GEM ships as {FORWARD_GEM})") -> list | None:
    """The level policy ``name`` over the data's ``codes`` (None: ``name`` is
    not a level): the data's system's own level, or ICD-9-CM's carried through
    the GEM file ``gem``, keeping the data's codes.  ``how``: what the refusal
    of an ICD-9 level without a GEM tells the user to do."""
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
    present = set(map(str, codes))
    carried = carried_level(level, gem_forward(read_gem(gem)), code_system)
    kept = ([c for c in u if c in present] for u in carried.constraints)
    return [u for u in kept if u]


def carried_level(level: int, mapping, target: str = ICD10CM) -> UtilityPolicy:
    """ICD-9-CM's level-``level`` hierarchy policy carried into ``target``
    (docs/methods/ugaclip.md#ugaclip-policy): the ICD-9-CM codes ``mapping``
    carries, grouped by their category, section or chapter (``hierarchy_groups``)
    and named by it, then carried by ``mapped`` (a target two groups reach stays
    with the first in code order).  The diseases an ICD-9 analysis grouped,
    written in ``target``'s codes, not ``target``'s own, finer, categories."""
    groups = hierarchy_groups(mapping.codes, level, code_system=ICD9CM)
    names = sorted(groups)
    policy = UtilityPolicy.from_lists([groups[n] for n in names], names,
                                      f"icd9-level-{level}")
    return policy.mapped(mapping, target)
