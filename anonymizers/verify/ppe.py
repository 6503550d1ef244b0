"""Verifier of a PPE privacy policy (Loukides et al., PNAS 2010, SI Algorithm 1).

Re-derives, from the input table alone and with plain Python sets, what a
policy extracted with threshold k and filter F must be:

* every constraint is the code set of some filtered record (a visit under
  ``single-visit``, a patient under ``all-visits``), listed as sorted,
  distinct codes, and no constraint is listed twice;
* every constraint has support < k;
* no constraint is contained in another constraint;
* every filtered record with support < k is contained in some constraint.

Support counts **patients**: sup(S) is the number of patients whose full
record (all their codes, over all visits) contains S.  That is what an attacker
sees: the release has one record per patient, so knowing the codes of one
visit narrows the candidates to the patients whose released record holds those
codes; repeated visits of one patient add no cover.  Under ``all-visits`` a
filtered record is a patient, so records and patients coincide.

Together these conditions determine the policy uniquely (the maximal filtered
records of support < k), so a policy that passes is the one Algorithm 1
returns, up to order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.verify.verdict import Verdict

PROPERTY = "ppe-policy"


def verify_policy(df: pd.DataFrame, constraints, k: int, filter: str) -> Verdict:
    """Check a policy (list of code lists, or the dict form) against ``df``.

    ``df`` has ``patient_id``, ``code`` and, for ``single-visit``, ``visit_id``.
    """
    if isinstance(constraints, dict):
        constraints = constraints.get("constraints", [])
    violations: list[str] = []
    cons = _shape(constraints, violations)
    patients, filtered = _records(df, filter)
    posting: dict[str, set[int]] = {}
    for i, rec in enumerate(patients):
        for code in rec:
            posting.setdefault(code, set()).add(i)

    def support(codes) -> int:
        sets = sorted((posting.get(c, set()) for c in codes), key=len)
        return len(set.intersection(*sets)) if sets else len(patients)

    records = set(filtered)
    for c in cons:
        if c not in records:
            violations.append(f"constraint {sorted(c)} is not the code set of any filtered record")
        s = support(c)
        if s >= k:
            violations.append(f"constraint {sorted(c)} has support {s} >= k={k}: already protected")
    by_code: dict[str, set[int]] = {}
    for j, c in enumerate(cons):
        for code in c:
            by_code.setdefault(code, set()).add(j)

    def holders(codes) -> set[int]:
        sets = sorted((by_code.get(code, set()) for code in codes), key=len)
        return set.intersection(*sets) if sets else set()

    for j, c in enumerate(cons):
        others = holders(c) - {j}
        if others:
            other = cons[min(others)]
            violations.append(f"constraint {sorted(c)} is contained in constraint {sorted(other)}")
    for rec in records:
        if support(rec) < k and not holders(rec):
            violations.append(f"filtered record {sorted(rec)} has support {support(rec)} < k={k} "
                              "but no constraint contains it")
    return Verdict.from_violations(PROPERTY, len(cons) + len(records), violations)


def _shape(constraints, violations: list[str]) -> list[frozenset]:
    out, seen = [], set()
    for n, c in enumerate(constraints, start=1):
        codes = [str(x) for x in c]
        if not codes:
            violations.append(f"constraint {n} is empty")
            continue
        if codes != sorted(set(codes)):
            violations.append(f"constraint {n} {codes} is not a sorted list of distinct codes")
        fs = frozenset(codes)
        if fs in seen:
            violations.append(f"constraint {sorted(fs)} is listed twice")
            continue
        seen.add(fs)
        out.append(fs)
    return out


def _records(df: pd.DataFrame, filter: str) -> tuple[list[frozenset], list[frozenset]]:
    """Patient records and filtered records as frozensets of code strings.

    Records are cut from one sort of the rows by group, and equal codes share
    one string object: iterating a groupby over Arrow-backed strings made a
    Python string per row (at 11.7M rows, most of the verifier's time and
    memory)."""
    if filter not in ("all-visits", "single-visit"):
        raise ValueError(f"unknown filter {filter!r}")
    c_idx, c_uni = pd.factorize(df["code"].astype(str), sort=False)
    code = np.asarray(c_uni, dtype=object)[c_idx]
    patients = _sets(pd.factorize(df["patient_id"].astype(str), sort=False)[0], code)
    if filter == "all-visits":
        return patients, patients
    visit = pd.MultiIndex.from_arrays([df["patient_id"].astype(str), df["visit_id"].astype(str)])
    return patients, _sets(pd.factorize(visit, sort=False)[0], code)


def _sets(group: np.ndarray, code: np.ndarray) -> list[frozenset]:
    """The codes of each group (groups numbered 0..n-1), as frozensets."""
    order = np.argsort(group, kind="stable")
    cuts = np.flatnonzero(np.diff(group[order])) + 1
    return [frozenset(part.tolist()) for part in np.split(code[order], cuts)] if len(code) else []
