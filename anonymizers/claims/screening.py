"""Removal of high-risk members and claims (El Emam et al. 2012, appendix section 2), with the
comparison of removed and remaining members (section 3); ``screen(claims_df, policy)``.
Readings chosen and why: docs/methods/hhp.md#claims-screening."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from anonymizers.claims.codes import CodeIndex, code_values, split_code_lists
from anonymizers.claims.comparison import compare_excluded
from anonymizers.claims.inputs import normalize
from anonymizers.claims.policy import DATA, DEFAULT_POLICY, ScreeningPolicy, load_policy
from anonymizers.errors import InputError

DAY = np.timedelta64(1, "D")
NAMED_POLICIES = {"hhp-2012-v1": DEFAULT_POLICY,
                  "hhp-2012-icd10-v1": DATA / "screening_policy_icd10_v1.yaml"}
#: the diagnosis code system each bundled policy's lists are written in
POLICY_CODE_SYSTEM = {"hhp-2012-v1": "icd9cm", "hhp-2012-icd10-v1": "icd10cm"}
#: the bundled policy of each code system (the CLI's default policy)
POLICY_OF_SYSTEM = {system: name for name, system in POLICY_CODE_SYSTEM.items()}
COLUMN_OF_FIELD = {"dx": "dx_code", "procedure": "procedure_code",
                   "place_of_service": "place_of_service"}


@dataclass(frozen=True)
class ScreeningResult:
    """What screening kept and removed.

    claims : DataFrame -- the kept rows of the input, its columns and index.
    kept : ndarray of bool -- one per input row.
    removed_members : DataFrame -- ``member_id, rules`` of every removed
        member (source ids: an audit record, never part of a release).
    report : dict -- counts per rule, rules not applied, and the comparison
        of excluded with remaining members (Tables 1-4, KS tests); no ids.
    policy_version : str
    """

    claims: pd.DataFrame
    kept: np.ndarray
    removed_members: pd.DataFrame
    report: dict
    policy_version: str


def named_policy(name: str) -> ScreeningPolicy:
    """The bundled policy called ``name`` (a key of ``NAMED_POLICIES``)."""
    if name not in NAMED_POLICIES:
        raise InputError("policy", f"unknown screening policy {name!r}; known: "
                         f"{sorted(NAMED_POLICIES)}")
    policy = load_policy(NAMED_POLICIES[name])
    if policy.version != name:
        raise InputError(str(NAMED_POLICIES[name]), f"file has version {policy.version!r}, "
                         f"expected {name!r}")
    return policy


def policy_code_system(source: str) -> str | None:
    """The code system of a policy given as a bundled name or a file: that of
    the bundled policy whose version the file carries; None when the version
    is none of theirs (a custodian's own policy, whose system we cannot tell)."""
    version = source if source in NAMED_POLICIES else load_policy(source).version
    return POLICY_CODE_SYSTEM.get(version)


def screen(claims_df: pd.DataFrame, policy: ScreeningPolicy | str | None = None,
           compare: bool = True) -> ScreeningResult:
    """Screen a claims table (format: ``anonymizers.claims``) with ``policy``
    (a ScreeningPolicy or a name of ``NAMED_POLICIES``; default: the bundled
    v1 policy)."""
    policy = named_policy(policy) if isinstance(policy, str) else (
        policy if policy is not None else load_policy())
    norm, present = normalize(claims_df)
    kept, removed, report = screen_normalized(norm, present, policy, compare)
    return ScreeningResult(claims=claims_df.iloc[np.flatnonzero(kept)], kept=kept,
                           removed_members=removed, report=report,
                           policy_version=policy.version)


def screen_normalized(norm: pd.DataFrame, present: set[str], policy: ScreeningPolicy,
                      compare: bool = True) -> tuple[np.ndarray, pd.DataFrame, dict]:
    """The kept-row mask, the removed members and the report, for a table
    already normalized by ``inputs.normalize``."""
    member, ids = pd.factorize(norm["member_id"])
    n_members = len(ids)
    report: dict = {"policy_version": policy.version,
                    "input": {"members": n_members, "claims": len(norm)},
                    "member_rules": {}, "claim_rules": {}, "not_applied": []}
    other = _OtherDx(norm["other_dx"]) if "other_dx_codes" in present else None
    fields: dict[str, CodeIndex] = {}
    flagged = np.zeros(n_members, dtype=bool)
    reasons: list[list[str]] = [[] for _ in range(n_members)]
    for rule in policy.member_rules:
        hit = _member_rule_hits(rule, norm, present, other, report, fields)
        _flag(hit, member, flagged, reasons, rule.name, report["member_rules"])
    newborn, non_medical = _claim_rule_hits(norm, present, policy, report)
    rules = policy.claim_rules
    for name, hit, scope in (("newborn", newborn, rules.newborn_scope),
                             ("non_medical_procedure", non_medical, rules.non_medical_scope)):
        if scope == "member":
            _flag(hit, member, flagged, reasons, name, report["claim_rules"])
    excluded_claim = flagged[member]
    kept = ~excluded_claim
    for name, hit, scope in (("newborn", newborn, rules.newborn_scope),
                             ("non_medical_procedure", non_medical, rules.non_medical_scope)):
        if scope == "claim":
            report["claim_rules"][name] = {"scope": "claim", "claims": int((hit & kept).sum())}
            kept &= ~hit
    _summary(report, member, n_members, flagged, excluded_claim, kept)
    if compare:
        report["comparison"] = compare_excluded(norm, excluded_claim)
    removed = pd.DataFrame({"member_id": ids[flagged].astype(object),
                            "rules": [";".join(reasons[i]) for i in np.flatnonzero(flagged)]})
    return kept, removed, report


def _flag(hit, member, flagged, reasons, name, section) -> None:
    who = np.unique(member[hit])
    section[name] = {"scope": "member", "members": len(who), "claims": int(hit.sum())}
    flagged[who] = True
    for i in who:
        reasons[i].append(name)


def _summary(report, member, n_members, flagged, excluded_claim, kept) -> None:
    kept_members = np.zeros(n_members, dtype=bool)
    kept_members[member[kept]] = True
    report["members_removed"] = int(flagged.sum())
    report["claims_of_removed_members"] = int(excluded_claim.sum())
    report["members_emptied_by_claim_rules"] = int((~flagged & ~kept_members).sum())
    report["kept"] = {"members": int(kept_members.sum()), "claims": int(kept.sum())}


def _member_rule_hits(rule, norm, present, other, report, fields) -> np.ndarray:
    """Rows whose ``rule.field`` (or, for ``dx``, any other diagnosis) matches
    the rule; ``fields`` caches each field's ``CodeIndex`` across rules."""
    n = len(norm)
    col = COLUMN_OF_FIELD[rule.field]
    if rule.field != "dx" and col not in present:
        if rule.prefixes or rule.codes:
            report["not_applied"].append(f"{rule.name}: no {col} column")
        return np.zeros(n, dtype=bool)
    if rule.field not in fields:
        fields[rule.field] = CodeIndex(norm[rule.field])
    hit = fields[rule.field].hits(rule.prefixes, rule.codes)
    if rule.field == "dx" and other is not None:
        hit |= other.hits(rule.prefixes, rule.codes)
    return hit


def _claim_rule_hits(norm, present, policy, report) -> tuple[np.ndarray, np.ndarray]:
    n = len(norm)
    rules = policy.claim_rules
    newborn = np.zeros(n, dtype=bool)
    if rules.newborn_days is not None:
        if "birth_date" in present:
            birth = norm["birth"].to_numpy()
            known = ~np.isnat(birth)
            days = np.full(n, -1, dtype=np.int64)
            days[known] = (norm["date"].to_numpy()[known] - birth[known]) // DAY
            newborn = known & (days >= 0) & (days <= rules.newborn_days)
        else:
            report["not_applied"].append("newborn: no birth_date column")
    idx, uniques = pd.factorize(norm["procedure"])
    lengths = np.fromiter((len(u) for u in uniques), dtype=np.int64, count=len(uniques))
    letter = np.array([u[:1].isalpha() for u in uniques], dtype=bool)
    digits = np.array([u.isdigit() for u in uniques], dtype=bool)
    per_unique = ((rules.letter_prefix & letter)
                  | (digits & np.isin(lengths, list(rules.digit_lengths))))
    non_medical = per_unique[idx] if n else np.zeros(0, dtype=bool)
    if "procedure_code" not in present and (rules.letter_prefix or rules.digit_lengths):
        report["not_applied"].append("non_medical_procedure: no procedure_code column")
    return newborn, non_medical


class _OtherDx:
    """The ``other_dx_codes`` of each claim, split once (``split_code_lists``)."""

    def __init__(self, values):
        """``values``: a sequence or a pandas Series (factorized as it is)."""
        self.index, uniques = pd.factorize(code_values(values))
        self.owner, self.codes = split_code_lists(_texts(uniques))
        self.n_uniques = len(uniques)

    def hits(self, prefixes, codes) -> np.ndarray:
        part_hit = self.codes.hits(prefixes, codes)
        per_unique = np.zeros(self.n_uniques, dtype=bool)
        per_unique[self.owner[part_hit]] = True
        return per_unique[self.index]


def _texts(uniques):
    """Distinct values as ``split_code_lists`` takes them: an Arrow-backed
    string array as Arrow (a Python string per value took a third of a
    screening batch's time at 270,000 distinct lists), anything else as str."""
    values = uniques.array if isinstance(uniques, pd.Index) else uniques
    if isinstance(values, pd.api.extensions.ExtensionArray) and pd.api.types.is_string_dtype(
            values.dtype):
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return [str(u) for u in uniques]
