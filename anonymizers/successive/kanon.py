"""UGACLIP and LDA over successive releases (docs/threat-model-successive.md, Sections 3.2-3.3): the
linking adversary's attack and the append-only defence.
Readings chosen and why: docs/methods/successive.md#successive-kanon."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from anonymizers.errors import ParameterError
from anonymizers.hierarchy import ROOT, for_system
from anonymizers.successive.harness import ReleaseView, intersection_attack


def new_patients(records: pd.DataFrame, published: set, k: int) -> tuple[pd.DataFrame, int]:
    """The rows of patients not published before, and 0; or no row and their
    number when fewer than ``k`` (held back for a later run)."""
    fresh = records[~records["patient_id"].astype(str).isin(published)]
    n = fresh["patient_id"].nunique()
    if n < k:
        return fresh.iloc[:0], n
    return fresh.reset_index(drop=True), 0


def coverage(current: pd.DataFrame, published: Sequence[pd.DataFrame]) -> dict:
    """How much of the scope's current ``patient_id, code`` pairs the
    publications so far carry (each through its patient's latest
    publication): ``published_pairs`` and ``stale_pairs`` (gained since)."""
    cur = set(zip(current["patient_id"].astype(str), current["code"].astype(str)))
    latest: dict[str, set] = {}
    for table in published:
        t = table[["patient_id", "code"]].astype(str)
        for p, codes in t.groupby("patient_id")["code"]:
            latest[p] = set(codes)
    carried = sum(c in latest.get(p, ()) for p, c in cur)
    return {"current_pairs": len(cur), "published_pairs": carried,
            "stale_pairs": len(cur) - carried,
            "published_share": carried / len(cur) if cur else 1.0}


# --- UGACLIP ------------------------------------------------------------------------

def attack_ugaclip(releases: Sequence[dict], truth: Sequence[pd.DataFrame] | None,
                   k: int | None = None, m: int | None = None,
                   constraints: Sequence[Sequence[str]] | None = None) -> dict:
    """The linking adversary against UGACLIP releases (JSON dicts, oldest
    first).  With ``constraints`` (the privacy policies' code lists) the
    adversary knows a constraint its target holds -- in one claim when the
    truth tables carry ``visit_id`` (a single-visit policy), else in its
    record; without, any ``m`` codes."""
    _need_truth(truth, releases)
    k = releases[-1]["k"] if k is None else k
    if constraints is None and m is None:
        raise ParameterError("constraints", "give the privacy policy (UGACLIP protects its "
                             "constraints) or m")
    views = [_ugaclip_view(doc, t) for doc, t in zip(releases, truth)]
    sets_of = None
    if constraints is not None:
        policy = [frozenset(map(str, c)) for c in constraints if len(c)]
        visits = [_claims_of(t) for t in truth]

        def sets_of(held, target):
            return [c for c in policy if c <= held and all(
                any(c <= v for v in by[target]) for by in visits
                if by is not None and target in by)]
    return intersection_attack(views, k, m, sets_of)


def _claims_of(truth: pd.DataFrame) -> dict | None:
    """Under a single-visit policy (``visit_id`` in the truth) the adversary
    knows one claim's codes: each patient's code set per visit; None when
    the truth has no visits (it may know any codes of the record)."""
    if "visit_id" not in truth.columns:
        return None
    t = truth[["patient_id", "visit_id", "code"]].astype(str)
    out: dict = {}
    for (p, _), codes in t.groupby(["patient_id", "visit_id"], sort=False)["code"]:
        out.setdefault(p, []).append(frozenset(codes))
    return out


def _ugaclip_view(doc: dict, truth: pd.DataFrame) -> ReleaseView:
    item = {str(c): n for n, codes in enumerate(doc["items"]) for c in codes}
    t = truth[["patient_id", "code"]].astype(str)
    atoms = {p: frozenset(g) for p, g in t.groupby("patient_id")["code"]}
    t = t[t["code"].isin(item)]
    t = t.assign(item=t["code"].map(item))
    holders = {i: frozenset(g) for i, g in t.groupby("item")["patient_id"]}
    everyone = frozenset(atoms)

    def candidates(s: frozenset) -> frozenset:
        out = everyone
        for i in {item[c] for c in s if c in item}:
            out = out & holders.get(i, frozenset())
        return out
    return ReleaseView(atoms, candidates)


# --- LDA ----------------------------------------------------------------------------

def attack_lda(releases: Sequence[dict], truth: Sequence[pd.DataFrame] | None,
               k: int | None = None, maps: Sequence[pd.DataFrame] | None = None,
               code_system: str = "icd9cm") -> dict:
    """The linking adversary against LDA releases (JSON dicts as the CLI
    writes them) given ``truth[r]`` (``patient_id, code, age``) and
    ``maps[r]`` (``pseudonym, patient_id``, the CLI's ``--map``).

    LDA's adversary knows its target's whole trajectory (Tamersoy 2011,
    IV.2: k-anonymity of the (ICD, Age) sequence), and a released pair may
    be suppressed, so a record is a candidate when its released trajectory
    generalizes, pair by pair and in order, some subsequence of the
    target's trajectory at that release."""
    _need_truth(truth, releases)
    if maps is None or len(maps) != len(releases):
        raise ParameterError("maps", "LDA's release is linked to patients through its "
                             "pseudonym map: one map per release")
    k = releases[-1]["k"] if k is None else k
    covers = _PairCover(for_system(code_system))
    views = [_lda_view(doc, t, mp, covers) for doc, t, mp in zip(releases, truth, maps)]
    return intersection_attack(views, k, None, lambda _held, target: [target])


def _lda_view(doc: dict, truth: pd.DataFrame, pmap: pd.DataFrame, covers) -> ReleaseView:
    owner = dict(zip(pmap["pseudonym"].astype(str), pmap["patient_id"].astype(str)))
    trajectories: dict[tuple, set] = {}
    for rec in doc["records"]:
        traj = tuple((str(c), str(a)) for c, a in rec["trajectory"])
        trajectories.setdefault(traj, set()).add(owner[str(rec["patient_id"])])
    t = truth.assign(patient_id=truth["patient_id"].astype(str),
                     code=truth["code"].astype(str).str.strip(),
                     age=pd.to_numeric(truth["age"]).astype(int))
    keys = ["age", "service_date", "code"] if "service_date" in t.columns else ["age", "code"]
    t = t.sort_values(keys, kind="stable", na_position="first")
    original = {p: list(zip(g["code"], g["age"])) for p, g in t.groupby("patient_id")}
    atoms = {p: frozenset(pairs) for p, pairs in original.items()}

    def candidates(target: str) -> frozenset:
        found: set = set()
        for traj, who in trajectories.items():
            if covers.embeds(traj, original[target]):
                found |= who
        return frozenset(found)
    return ReleaseView(atoms, candidates)


class _PairCover:
    """Released (code, age) pair over an original one: the code itself, an
    ICD-9 ancestor or ``*``; an age interval ``lo-hi`` holding the age, or ``*``."""

    def __init__(self, icd):
        self.icd, self.ancestors = icd, {}

    def code(self, released: str, original: str) -> bool:
        if released in (ROOT, original):
            return True
        if original not in self.ancestors:
            self.ancestors[original] = (set(self.icd.path(original)) if original in self.icd
                                        else set())
        return released in self.icd and self.icd.node(released) in self.ancestors[original]

    @staticmethod
    def age(released: str, original: int) -> bool:
        if released == ROOT:
            return True
        bounds = released.split("-")
        return bounds[0].isdigit() and bounds[-1].isdigit() and \
            int(bounds[0]) <= original <= int(bounds[-1])

    def embeds(self, traj: tuple, original: list) -> bool:
        """Does ``traj`` generalize, in order, distinct pairs of ``original``?
        (Dynamic programme over prefixes: ``done[j]`` = the first j released
        pairs fit in the original pairs read so far.)"""
        done = [True] + [False] * len(traj)
        for code, age in original:
            for j in range(len(traj), 0, -1):
                if done[j - 1] and self.code(traj[j - 1][0], code) and \
                        self.age(traj[j - 1][1], age):
                    done[j] = True
        return done[-1]


def _need_truth(truth, releases) -> None:
    if truth is None:
        raise ParameterError("truth", "the linking attack needs the patients' records "
                             "(--truth); without them only equal pseudonyms link releases")
    if len(truth) != len(releases):
        raise ParameterError("truth", f"{len(truth)} truth tables for {len(releases)} releases")

