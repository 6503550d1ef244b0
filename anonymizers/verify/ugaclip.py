"""Verifier of a UGACLIP release (Loukides et al., PNAS 2010, SI Definition 1
and Algorithm 2), from the input table, the release and the privacy policy,
with plain Python sets.

Checks, in the release's JSON form (``items``, ``suppressed``, ``records``):

* Definition 1: items are non-empty, sorted lists of distinct codes, pairwise
  disjoint and disjoint from the suppressed codes, and the items together with
  the suppressed codes are exactly the codes of the input.
* Rewriting: there is one released record per input patient, with distinct
  ids, each holding declared items at most once; and the released records are,
  as a multiset, the input records with every code replaced by its item and
  suppressed codes dropped (pseudonyms hide which is which, so records are
  compared as a multiset).
* Privacy: for every privacy constraint p, let p' be its codes that are not
  suppressed.  If p' is empty, p is satisfied (suppressed: its codes appear in
  no record, so knowing them narrows nothing).  Otherwise the items holding
  the codes of p' must all be present together in at least k released
  records.  A partly suppressed constraint is judged on p': the suppressed
  codes are gone from every record, so an attacker who knows all of p can only
  match p'.  A constraint that no input record holds (a code absent from the
  input, or a combination no patient has) identifies nobody and is counted as
  vacuous, not as a violation.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from anonymizers.verify.verdict import Verdict

PROPERTY = "ugaclip-k-protection"


def verify_release(df: pd.DataFrame, release: dict, constraints, k: int) -> Verdict:
    """Check ``release`` (the JSON form) made from ``df`` (``patient_id, code``)
    against ``constraints`` (code lists, or a policy dict) and threshold k."""
    if isinstance(constraints, dict):
        constraints = constraints.get("constraints", [])
    violations: list[str] = []
    inputs = [frozenset(codes) for _, codes in
              df.astype({"patient_id": str, "code": str}).groupby("patient_id")["code"]]
    domain = frozenset().union(*inputs) if inputs else frozenset()
    item_of = _check_items(release, domain, violations)
    out = _check_records(release, item_of, violations)
    _check_rewrite(inputs, out, item_of, violations)
    suppressed = {str(c) for c in release.get("suppressed", [])}
    checked = _check_privacy(constraints, k, inputs, out, item_of, suppressed, violations)
    return Verdict.from_violations(PROPERTY, checked + len(out), violations)


def _check_items(release: dict, domain: frozenset, violations: list) -> dict:
    item_of: dict[str, frozenset] = {}
    for item in release.get("items", []):
        codes = [str(c) for c in item]
        if not codes or codes != sorted(set(codes)):
            violations.append(f"item {codes} is not a non-empty sorted list of distinct codes")
        fs = frozenset(codes)
        for c in fs:
            if c in item_of:
                violations.append(f"code {c!r} is in two items: {sorted(item_of[c])} and {codes}")
            item_of[c] = fs
    suppressed = [str(c) for c in release.get("suppressed", [])]
    for c in suppressed:
        if c in item_of:
            violations.append(f"code {c!r} is both suppressed and in item {sorted(item_of[c])}")
    covered = set(item_of) | set(suppressed)
    if covered != domain:
        extra, lost = sorted(covered - domain), sorted(domain - covered)
        violations.append(f"items and suppressed codes do not cover the input's codes exactly: "
                          f"not in input {extra[:10]}, in neither {lost[:10]}")
    return item_of


def _check_records(release: dict, item_of: dict, violations: list) -> list[frozenset]:
    declared = set(item_of.values())
    out, ids = [], Counter()
    for rec in release.get("records", []):
        ids[str(rec.get("patient_id"))] += 1
        items = [frozenset(str(c) for c in i) for i in rec.get("items", [])]
        if len(set(items)) != len(items):
            violations.append(f"record {rec.get('patient_id')!r} lists an item twice")
        for i in items:
            if i not in declared:
                violations.append(f"record {rec.get('patient_id')!r} holds undeclared item {sorted(i)}")
        out.append(frozenset(items))
    repeated = [p for p, n in ids.items() if n > 1]
    if repeated:
        violations.append(f"patient ids repeated in the release: {repeated[:10]}")
    return out


def _check_rewrite(inputs, out, item_of, violations) -> None:
    if len(inputs) != len(out):
        violations.append(f"{len(inputs)} input patients but {len(out)} released records")
    expected = Counter(frozenset(item_of[c] for c in rec if c in item_of) for rec in inputs)
    if expected != Counter(out):
        missing = expected - Counter(out)
        example = next(iter(missing), None)
        violations.append("released records are not the input records rewritten by the items"
                          + (f" (e.g. expected {sorted(map(sorted, example))})" if example else ""))


def _check_privacy(constraints, k, inputs, out, item_of, suppressed, violations) -> int:
    holders: dict[frozenset, set[int]] = {}
    for n, rec in enumerate(out):
        for item in rec:
            holders.setdefault(item, set()).add(n)
    in_posting: dict[str, set[int]] = {}
    for n, rec in enumerate(inputs):
        for c in rec:
            in_posting.setdefault(c, set()).add(n)
    for p in constraints:
        codes = {str(c) for c in p}
        if not codes or not set.intersection(*(in_posting.get(c, set()) for c in codes)):
            continue  # vacuous: no input record holds p
        left = codes - suppressed
        if not left:
            continue
        if any(c not in item_of for c in left):
            violations.append(f"constraint {sorted(codes)}: codes {sorted(left - set(item_of))} "
                              "are neither suppressed nor in any item")
            continue
        items = {item_of[c] for c in left}
        support = len(set.intersection(*(holders.get(i, set()) for i in items)))
        if support < k:
            violations.append(f"constraint {sorted(codes)} maps to items "
                              f"{sorted(map(sorted, items))} held by {support} < k={k} records")
    return len(constraints)
