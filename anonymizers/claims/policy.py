"""The versioned screening policy (El Emam et al. 2012, appendix section 2).

The code lists live in ``anonymizers/data/hhp/screening_policy_v1.yaml``, not
in code; a release records the policy's ``version``.  ``load_policy(path)``
reads and validates a policy file; ``ScreeningPolicy.with_rare_visible``
adds the custodian's rare and visible disease codes (the paper cites a list,
reference [1], without printing it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from anonymizers.claims.codes import expand_prefixes
from anonymizers.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "hhp"
DEFAULT_POLICY = DATA / "screening_policy_v1.yaml"
FIELDS = ("dx", "procedure", "place_of_service")
SCOPES = ("claim", "member")
RARE_VISIBLE = "rare_visible_disease"


@dataclass(frozen=True)
class MemberRule:
    """A member with one claim matching the rule is removed with all claims.

    ``prefixes`` match by prefix (undotted), ``codes`` match exactly.
    """

    name: str
    field: str
    prefixes: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class ClaimRules:
    """Claims removed one by one (scope 'claim') or with their member.

    newborn_days : int or None -- claims up to and including this many days
        after birth are newborn claims (None: rule off).
    letter_prefix : bool -- a procedure code starting with a letter (HCPCS
        level II) is not a medical procedure.
    digit_lengths : tuple of int -- all-digit procedure codes of these
        lengths (three digit revenue or chapter codes) are not medical
        procedures.
    """

    newborn_days: int | None = 28
    newborn_scope: str = "claim"
    letter_prefix: bool = True
    digit_lengths: tuple[int, ...] = (3,)
    non_medical_scope: str = "claim"


@dataclass(frozen=True)
class ScreeningPolicy:
    version: str
    member_rules: tuple[MemberRule, ...]
    claim_rules: ClaimRules
    source: str = ""
    extra_rare_visible: tuple[str, ...] = ()

    def with_rare_visible(self, codes) -> ScreeningPolicy:
        """The policy with ``codes`` added to the rare visible disease rule."""
        extra = expand_prefixes(codes, "rare_visible_codes")
        if not extra:
            return self
        rules = list(self.member_rules)
        at = [i for i, r in enumerate(rules) if r.name == RARE_VISIBLE]
        if at:
            r = rules[at[0]]
            rules[at[0]] = replace(r, prefixes=tuple(dict.fromkeys(r.prefixes + extra)))
        else:
            rules.append(MemberRule(RARE_VISIBLE, "dx", extra, (), "rare visible diseases"))
        return replace(self, member_rules=tuple(rules),
                       extra_rare_visible=self.extra_rare_visible + extra)


def load_policy(path: str | Path | None = None) -> ScreeningPolicy:
    """Read a screening policy file (YAML); InputError naming the problem."""
    path = Path(path) if path is not None else DEFAULT_POLICY
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "policy file not found") from None
    except yaml.YAMLError as exc:
        raise InputError(str(path), f"not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not doc.get("version"):
        raise InputError(str(path), "a policy needs a non-empty 'version' field")
    rules = tuple(_member_rule(r, str(path)) for r in doc.get("member_rules") or [])
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise InputError(str(path), f"member rule names must be distinct: {names}")
    return ScreeningPolicy(version=str(doc["version"]), member_rules=rules,
                           claim_rules=_claim_rules(doc.get("claim_rules") or [], str(path)),
                           source=str(doc.get("source", "")))


def _member_rule(r, src: str) -> MemberRule:
    if not isinstance(r, dict) or not r.get("name"):
        raise InputError(src, f"every member rule needs a name, got {r!r}")
    if r.get("field") not in FIELDS:
        raise InputError(src, f"rule {r['name']!r}: field must be one of {FIELDS}, "
                         f"got {r.get('field')!r}")
    codes = tuple(str(c).strip() for c in r.get("codes") or [])
    if r["field"] == "place_of_service":
        codes = tuple(c.zfill(2) if c.isdigit() and len(c) == 1 else c for c in codes)
    return MemberRule(name=str(r["name"]), field=r["field"],
                      prefixes=expand_prefixes(r.get("prefixes") or [], src), codes=codes,
                      description=str(r.get("description", "")).strip())


def _claim_rules(items, src: str) -> ClaimRules:
    by_name = {}
    for r in items:
        if not isinstance(r, dict) or r.get("name") not in ("newborn", "non_medical_procedure"):
            raise InputError(src, f"claim rules are 'newborn' and 'non_medical_procedure'; "
                             f"got {r!r}")
        if r.get("scope", "claim") not in SCOPES:
            raise InputError(src, f"claim rule {r['name']!r}: scope must be one of {SCOPES}")
        by_name[r["name"]] = r
    newborn = by_name.get("newborn")
    non_med = by_name.get("non_medical_procedure")
    days = None if newborn is None else newborn.get("within_days_of_birth")
    if days is not None and (not isinstance(days, int) or days < 0):
        raise InputError(src, "newborn.within_days_of_birth must be an integer >= 0")
    lengths = tuple(int(x) for x in (non_med or {}).get("digit_lengths") or [])
    return ClaimRules(
        newborn_days=days,
        newborn_scope=(newborn or {}).get("scope", "claim"),
        letter_prefix=bool((non_med or {}).get("letter_prefix", False)),
        digit_lengths=lengths,
        non_medical_scope=(non_med or {}).get("scope", "claim"))
