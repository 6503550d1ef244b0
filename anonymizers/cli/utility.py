"""The hierarchy-level utility policies ``ugaclip`` and ``disassociate`` accept by
name: ``icd9-level-1/2/3`` and ``icd10-level-1/2/3`` (``anonymizers.policies``).

A level of the data's own code system groups the data's codes.  ICD-9-CM's
levels also apply to ICD-10-CM data through ``--gem``: the ICD-9 groups are
carried into ICD-10-CM codes (``ugaclip.policy.carried_level``), so a custodian
moving to ICD-10-CM can keep the diseases its ICD-9 analyses grouped
(docs/methods/ugaclip.md#ugaclip-policy)."""

from __future__ import annotations

from anonymizers.codesystems import ICD9CM, NAMES
from anonymizers.errors import ParameterError
from anonymizers.policies import hierarchy_policy, named_level


def level_policy(name: str, codes, code_system: str, gem: str | None) -> list | None:
    """The level policy ``name`` over the data's ``codes`` (None: ``name`` is
    not a level): the data's system's own level, or ICD-9-CM's carried through
    the GEM file ``gem``, keeping the data's codes."""
    named = named_level(name)
    if named is None:
        return None
    system, level = named
    if system == code_system:
        return hierarchy_policy(codes, level, code_system=code_system)
    if system != ICD9CM or not gem:
        carry = ", or give --gem to carry it into ICD-10-CM" if system == ICD9CM else ""
        raise ParameterError("utility_policy", f"{name} groups {NAMES[system]} codes; the "
                             f"data's are {NAMES[code_system]}: use "
                             f"{code_system[:-2]}-level-{level}{carry}")
    from anonymizers.codesystems import gem_forward
    from anonymizers.io import read_gem
    from anonymizers.ugaclip.policy import carried_level

    present = set(map(str, codes))
    carried = carried_level(level, gem_forward(read_gem(gem)), code_system)
    kept = ([c for c in u if c in present] for u in carried.constraints)
    return [u for u in kept if u]
