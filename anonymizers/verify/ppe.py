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
    return verify_policy_batches(lambda: [df], constraints, k, filter)


def verify_policy_batches(batches, constraints, k: int, filter: str) -> Verdict:
    """``verify_policy`` over the input given in batches of whole patients, so
    that memory holds one batch (plus the policy and small sets).
    ``batches()`` returns an iterable of DataFrames (as ``verify_policy``'s
    ``df``), and is called twice.

    Support is a count of patients, so it is the sum of the batches' counts.
    The first pass sums the constraints' supports, finds which constraints
    are filtered records, and collects the filtered records no constraint
    contains, unless one batch alone gives them support >= k (support only
    grows); the second pass sums the remaining records' supports.  A patient
    found in two batches is reported (the sums would count it twice).  The
    violations are those ``verify_policy`` reports; ``checked`` counts every
    batch's distinct filtered records (a record found in two batches counts
    twice).
    """
    if isinstance(constraints, dict):
        constraints = constraints.get("constraints", [])
    violations: list[str] = []
    cons = _shape(constraints, violations)
    constraints = None  # noqa: F841 - the caller may have handed over the only reference
    scan = _FirstPass(cons, k)
    for df in batches():
        scan.add(df, filter, violations)
    uncovered = scan.uncovered
    if uncovered:  # one batch: its counter is still at hand
        counters = [scan.count] if scan.n_batches == 1 else \
            (_counter(_records(df, filter)[0]) for df in batches())
        for count in counters:
            for rec in uncovered:
                uncovered[rec] += count(rec)
    for j, c in enumerate(cons):
        if not scan.found[j]:
            violations.append(f"constraint {sorted(c)} is not the code set of any filtered record")
        if scan.support[j] >= k:
            violations.append(f"constraint {sorted(c)} has support {scan.support[j]} >= k={k}: "
                              "already protected")
    violations += _contained(cons, scan.by_code)
    violations += [f"filtered record {sorted(rec)} has support {s} < k={k} but no constraint "
                   "contains it" for rec, s in uncovered.items() if s < k]
    return Verdict.from_violations(PROPERTY, scan.checked, violations)


class _FirstPass:
    """What the first pass over the batches gathers (see ``verify_policy_batches``)."""

    def __init__(self, cons: list[tuple], k: int):
        self.cons, self.k = cons, k
        self.index = {c: j for j, c in enumerate(cons)}
        self.by_code = _by_code(cons)
        self.support = np.zeros(len(cons), dtype=np.int64)
        self.found = np.zeros(len(cons), dtype=bool)
        self.uncovered: dict[tuple, int] = {}
        self.settled: set[tuple] = set()  # uncovered records with support >= k
        self.patients: set[str] = set()
        self.checked, self.n_batches, self.count = len(cons), 0, None

    def add(self, df: pd.DataFrame, filter: str, violations: list[str]) -> None:
        ids = set(df["patient_id"].astype(str).unique().tolist())
        twice = ids & self.patients
        if twice:
            violations.append(f"patients {sorted(twice)[:5]} are in two batches: the batches "
                              "must hold whole patients")
        self.patients |= ids
        patients, filtered = _records(df, filter)
        count = self.count = _counter(patients)
        self.n_batches += 1
        self.support += np.array([count(c) for c in self.cons], dtype=np.int64)
        records = set(filtered)
        self.checked += len(records)
        for rec in records:
            if rec in self.index:  # a constraint holds itself
                self.found[self.index[rec]] = True
                continue
            if rec in self.settled or len(_holders(self.by_code, rec)):
                continue
            if count(rec) >= self.k:
                self.settled.add(rec)
                self.uncovered.pop(rec, None)
            else:
                self.uncovered.setdefault(rec, 0)


def _counter(patients: list[tuple]):
    """``count(codes)``: how many of ``patients`` hold every code."""
    posting: dict[str, set[int]] = {}
    for i, rec in enumerate(patients):
        for code in rec:
            posting.setdefault(code, set()).add(i)

    def count(codes) -> int:
        sets = sorted((posting.get(c, set()) for c in codes), key=len)
        return len(set.intersection(*sets)) if sets else len(patients)

    return count


NONE = np.zeros(0, dtype=np.int32)


def _by_code(cons: list[tuple]) -> dict[str, np.ndarray]:
    """Each code's constraints, as a sorted array of their numbers (sets of
    Python ints took 220 MB with the 105,212 constraints of the HHP release
    at 113,000 members; the arrays take 17 MB)."""
    sizes = np.fromiter(map(len, cons), dtype=np.int64, count=len(cons))
    owner = np.repeat(np.arange(len(cons), dtype=np.int32), sizes)
    ids, codes = pd.factorize(np.fromiter((x for c in cons for x in c), dtype=object,
                                          count=int(sizes.sum())))
    order = np.argsort(ids, kind="stable")  # stable: each code's numbers stay sorted
    cuts = np.flatnonzero(np.diff(ids[order])) + 1
    return dict(zip(codes.tolist(), np.split(owner[order], cuts))) if len(ids) else {}


def _holders(by_code: dict[str, np.ndarray], codes, alone: int = -1) -> np.ndarray:
    """The sorted numbers of the constraints containing ``codes`` (none for no
    codes): the rarest code's constraints, narrowed code by code.  Stops
    early when only ``alone`` is left (a constraint always holds itself)."""
    lists = sorted((by_code.get(code, NONE) for code in codes), key=len)
    out = lists[0] if lists else NONE
    for arr in lists[1:]:
        if not len(out) or (len(out) == 1 and out[0] == alone):
            break
        pos = np.searchsorted(arr, out)
        inside = pos < len(arr)
        out, pos = out[inside], pos[inside]
        out = out[arr[pos] == out]
    return out


def _contained(cons: list[tuple], by_code) -> list[str]:
    out = []
    for j, c in enumerate(cons):
        holders = _holders(by_code, c, alone=j)
        others = holders[holders != j]
        if len(others):
            out.append(f"constraint {sorted(c)} is contained in constraint "
                       f"{sorted(cons[int(others.min())])}")
    return out


def _shape(constraints, violations: list[str]) -> list[tuple]:
    """The constraints as code sets (``_key``); equal codes share one string
    (a parsed policy holds a string per occurrence: 4.2 million at 113,000
    members)."""
    out, seen, one = [], set(), {}
    for n, c in enumerate(constraints, start=1):
        codes = [one.setdefault(x, x) for x in map(str, c)]
        if not codes:
            violations.append(f"constraint {n} is empty")
            continue
        if codes != sorted(set(codes)):
            violations.append(f"constraint {n} {codes} is not a sorted list of distinct codes")
        key = _key(codes)
        if key in seen:
            violations.append(f"constraint {list(key)} is listed twice")
            continue
        seen.add(key)
        out.append(key)
    return out


def _key(codes) -> tuple:
    """A set of codes as its sorted tuple: a frozenset of 40 codes takes
    2.3 KB, the tuple 0.4 KB (with the 105,212 constraints of the HHP
    release at 113,000 members, the verifier peaked 250 MB lower)."""
    return tuple(sorted(set(codes)))


def _records(df: pd.DataFrame, filter: str) -> tuple[list[tuple], list[tuple]]:
    """Patient records and filtered records as code sets (``_key``).

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


def _sets(group: np.ndarray, code: np.ndarray) -> list[tuple]:
    """The codes of each group (groups numbered 0..n-1), as code sets (``_key``)."""
    order = np.argsort(group, kind="stable")
    cuts = np.flatnonzero(np.diff(group[order])) + 1
    return [_key(part.tolist()) for part in np.split(code[order], cuts)] if len(code) else []
