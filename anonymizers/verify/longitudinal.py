"""Verifier of LDA releases (Tamersoy 2011, Definition 1 and the problem
statement of Section IV.2.7), written from the definitions alone.

It checks, from the released table, the pseudonym map and the input:

1. the map is a bijection between released pseudonyms and input patients,
   and no pseudonym is an input patient id;
2. every released trajectory (the pairs of a pseudonym in position order,
   empty when everything was suppressed) is shared by at least k patients;
3. every released trajectory is, pair by pair and in order, a generalization
   of a subsequence of that patient's original trajectory: each released code
   is ``*`` or the original code or one of its ancestors in the ICD
   hierarchy (the tree of the release's code system, ICD-9-CM unless
   ``code_system`` or another tree is given), each released age is ``*`` or an interval of the age tree (the
   full binary tree over 1..128 unless another tree is given) holding the
   original age.  The original trajectory is ordered by age, then service
   date (empty first), then code, as the method defines it.

It does not import the algorithm; it uses the shared hierarchy only to ask
"is g the code or an ancestor of it".
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby

import numpy as np
import pandas as pd

from anonymizers.hierarchy import ROOT, Hierarchy, for_system
from anonymizers.verify.verdict import Verdict

PROPERTY = "LDA: k-anonymous trajectories, each an in-order generalization of the original"
AGE_LOW, AGE_HIGH = 1, 128


def verify_lda(records: pd.DataFrame, pseudonym_map: pd.DataFrame, original: pd.DataFrame,
               k: int, icd_hierarchy: Hierarchy | None = None,
               age_hierarchy: Hierarchy | None = None,
               code_system: str = "icd9cm") -> Verdict:
    """Check an LDA release; ``pseudonym_map`` has columns pseudonym, patient_id."""
    icd_h = for_system(code_system) if icd_hierarchy is None else icd_hierarchy
    bad: list[str] = []
    names = pseudonym_map["pseudonym"].astype(str).tolist()
    owners = pseudonym_map["patient_id"].tolist()
    bad += _check_map(names, owners, original)
    released = _released(records, set(names), bad)
    shared = Counter(released.get(p, ()) for p in names)
    for p in names:
        traj = released.get(p, ())
        if shared[traj] < k:
            bad.append(f"{p}: its trajectory {list(traj)} is shared by {shared[traj]} < k={k}")
    originals = _originals(original)
    covers_code = _CodeCover(icd_h)
    covers_age = _binary_age_cover if age_hierarchy is None else _tree_age_cover(age_hierarchy)
    for p, o in zip(names, owners):
        traj = released.get(p, ())
        if not _in_order(traj, originals.get(o, []), covers_code, covers_age):
            bad.append(f"{p}: released {list(traj)} does not generalize, in order, "
                       f"pairs of its original trajectory")
    return Verdict.from_violations(PROPERTY, len(names), bad)


def _check_map(names, owners, original) -> list[str]:
    bad = []
    if len(set(names)) != len(names):
        bad.append("a pseudonym is used for two patients")
    if len(set(owners)) != len(owners):
        bad.append("a patient is released under two pseudonyms")
    ids = set(original["patient_id"].tolist())
    missing = ids - set(owners)
    if missing:
        bad.append(f"{len(missing)} input patient(s) not released")
    extra = set(owners) - ids
    if extra:
        bad.append(f"{len(extra)} released patient(s) not in the input")
    reused = set(names) & {str(i) for i in ids}
    if reused:
        bad.append(f"{len(reused)} pseudonym(s) equal an input patient id")
    return bad


def _released(records: pd.DataFrame, names: set, bad: list) -> dict:
    df = records.sort_values(["patient_id", "position"], kind="stable")
    rows = zip(df["patient_id"].astype(str), df["position"].astype(int),
               df["code"].astype(str), df["age"].astype(str))
    out: dict = {}
    for p, group in groupby(rows, key=lambda row: row[0]):
        group = list(group)
        if p not in names:
            bad.append(f"{p}: released but not in the pseudonym map")
        if [row[1] for row in group] != list(range(len(group))):
            bad.append(f"{p}: positions are not 0..{len(group) - 1}")
        out[p] = tuple((row[2], row[3]) for row in group)
    return out


def _originals(original: pd.DataFrame) -> dict:
    df = pd.DataFrame({"patient_id": original["patient_id"],
                       "code": original["code"].astype(str).str.strip(),
                       "age": pd.to_numeric(original["age"]).astype(np.int64)})
    keys = ["age"]
    if "service_date" in original.columns:
        df["date"] = _dates(original["service_date"])
        keys.append("date")
    df = df.sort_values(keys + ["code"], kind="stable", na_position="first")
    out: dict = {}
    for p, code, age in zip(df["patient_id"], df["code"], df["age"].tolist()):
        out.setdefault(p, []).append((code, age))
    return out


def _dates(col: pd.Series) -> pd.Series:
    """Service dates; a value the column's inferred format misses is parsed on its own."""
    text = col.fillna("").astype(str).str.strip()
    text = text.where(text != "", None)
    dates = pd.to_datetime(text, errors="coerce")
    again = dates.isna() & text.notna()
    if again.any():
        dates[again] = pd.to_datetime(text[again], errors="coerce", format="mixed")
    return dates


def _in_order(released, original, covers_code, covers_age) -> bool:
    """Greedy earliest match: each released pair to the next original pair it
    generalizes (earliest matching never loses a later match)."""
    at = 0
    for code, age in released:
        while at < len(original) and not (covers_code(code, original[at][0])
                                           and covers_age(age, original[at][1])):
            at += 1
        if at == len(original):
            return False
        at += 1
    return True


class _CodeCover:
    """Is released code g the original code o or an ancestor of it?"""

    def __init__(self, h: Hierarchy):
        self.h, self.paths = h, {}

    def __call__(self, g: str, o: str) -> bool:
        if g == ROOT or g == o:
            return True
        if o not in self.paths:
            self.paths[o] = set(self.h.path(o)) if o in self.h else set()
        return g in self.h and self.h.node(g) in self.paths[o]


def _binary_age_cover(g: str, o: int) -> bool:
    """Is g "*" or an interval of the full binary tree over 1..128 holding o?"""
    if g == ROOT:
        return True
    lo, _, hi = g.partition("-")
    try:
        lo, hi = int(lo), int(hi or lo)
    except ValueError:
        return False
    size = hi - lo + 1
    dyadic = size >= 1 and size & (size - 1) == 0 and (lo - AGE_LOW) % size == 0
    return dyadic and AGE_LOW <= lo and hi <= AGE_HIGH and lo <= o <= hi


def _tree_age_cover(h: Hierarchy):
    def cover(g: str, o: int) -> bool:
        return g == ROOT or (str(o) in h and g in h.path(str(o)))
    return cover
