"""Independent cross-release verifier (docs/threat-model-successive.md, Sections 2-3): does a new
release, with those of its scope published before it, keep the method's guarantee?  ``check``.
Readings chosen and why: docs/methods/successive.md#successive-check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import for_system
from anonymizers.verify.longitudinal import _binary_age_cover, _CodeCover, _in_order
from anonymizers.verify.longitudinal import _originals as _lda_originals
from anonymizers.verify.verdict import Verdict

SET_PROPERTY = "k-anonymity of {method} composed over {n} releases (linking adversary, m={m})"
KMAP_PROPERTY = "k-map of the union of each patient's GCCens records over {n} releases"
METHODS = ("disassociation", "ugaclip", "lda", "gccens")


def check(method: str, history: Sequence[Mapping], new: Mapping, params: Mapping) -> Verdict:
    """Verdict of ``new`` combined with ``history`` for ``method`` (see
    docs/methods/successive.md#successive-check for the input shape and the property)."""
    if method == "medco":
        return _check_medco(list(history) + [new], params)
    found, checked = _breaches(method, history, new, params)
    n = len(history) + 1
    if method == "gccens":
        prop = KMAP_PROPERTY.format(n=n)
        bad = [f"a patient of the new release: its records combined hold {_show(s)}, "
               f"contained in {c} population record(s), fewer than k={params['k']}"
               for _, s, c in found]
    else:
        prop = SET_PROPERTY.format(method=method, n=n, m=params.get("m"))
        bad = [f"patient(s) present in releases {[r + 1 for r in sig]} hold {_show(s)}: {c} "
               f"candidate record(s) across those releases, fewer than k={params['k']}"
               for sig, s, c in found]
    return Verdict.from_violations(prop, checked, bad)


def _check_medco(releases: list[Mapping], params: Mapping) -> Verdict:
    """MedCo's check is its comparison attacks' verdict (real vs dummy, not
    k-anonymity): each release gives ``release`` (patient_id, code) and
    ``dummy_map`` (pseudonym, is_dummy, ...), as ``dummies`` writes them."""
    from anonymizers.successive.medco import check as medco_check
    return medco_check([r["release"] for r in releases], [r["dummy_map"] for r in releases],
                       min_codes=int(params.get("min_codes", 3)))


def breaches(method: str, history: Sequence[Mapping], new: Mapping,
             params: Mapping) -> list[tuple[tuple[int, ...], tuple[str, ...], int]]:
    """Every breach ``check`` counts, uncapped: (presence pattern as release
    indices from 0, the atoms, the candidates found).  For GCCens the pattern
    is empty and the atoms read ``code x count``."""
    return _breaches(method, history, new, params)[0]


def _breaches(method, history, new, params):
    if method not in METHODS:
        raise ParameterError("method", f"no cross-release check for {method!r}; "
                             f"known: {', '.join(METHODS)}")
    k = _int(params, "k")
    releases = list(history) + [new]
    if method == "gccens":
        return _check_kmap(releases, k)
    views = [_VIEWS[method](r, params) for r in releases]
    constraints = _constraints(params) if method == "ugaclip" else None
    m = None if constraints is not None or method == "lda" else _int(params, "m")
    return _check_sets(views, k, m, constraints)


def _int(params: Mapping, name: str) -> int:
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(name, f"must be an integer >= 1, got {value!r}")
    return int(value)


def _constraints(params: Mapping):
    """UGACLIP's privacy constraints as frozensets, or None to check every
    set of at most m codes instead."""
    c = params.get("constraints")
    if c is None:
        return None
    if isinstance(c, Mapping):
        c = c.get("constraints", [])
    return [frozenset(str(x) for x in s) for s in c if len(s)]


# --- the composed k-anonymity of set-valued releases --------------------------------

def _check_sets(views, k: int, m: int | None, constraints) -> tuple[list, int]:
    """(breaches, number of (patient, set) pairs checked)."""
    ids = sorted(set().union(*(v.atoms for v in views)))
    index = {p: i for i, p in enumerate(ids)}
    present = np.zeros((len(views), len(ids)), dtype=bool)
    for r, v in enumerate(views):
        present[r, [index[p] for p in v.atoms]] = True
    for v in views:
        v.bind(index, len(ids))
    pattern = present.T
    classes: dict[tuple, list[int]] = {}
    for i, row in enumerate(pattern):
        classes.setdefault(tuple(np.flatnonzero(row).tolist()), []).append(i)
    checked, bad = 0, []
    for sig, members in classes.items():
        in_class = np.zeros(len(ids), dtype=bool)
        in_class[members] = True
        sets = _sets_of_class(views, sig, [ids[i] for i in members], m, constraints)
        for s, holders in sets.items():
            checked += holders
            hosted = in_class.copy()
            for r in sig:
                hosted &= views[r].hosts(s)
            n = int(hosted.sum())
            if n < k:
                shown = (f"a whole trajectory of {len(views[sig[-1]].atoms[s])} pairs",) \
                    if isinstance(s, str) else tuple(sorted(map(str, s)))
                bad.append((sig, shown, n))
    return bad, checked


def _sets_of_class(views, sig, patients, m, constraints) -> dict:
    """Each set to check for the class (atoms every member holds throughout;
    for LDA each member itself) -> how many members hold it.  Candidates only
    shrink as a set grows, so sets of exactly m atoms (the whole record when
    shorter) suffice.  A member holding nothing throughout is checked with
    the empty set: its presence pattern alone must leave k candidates."""
    out: dict = {}
    for p in patients:
        held = frozenset.intersection(*(views[r].atoms[p] for r in sig))
        if getattr(views[sig[0]], "whole_record", False):
            sets = [p]  # the view reads each release's own record of p
        elif constraints is not None:
            sets = [c for c in constraints if c <= held
                    and all(views[r].holds(p, c) for r in sig)]
        else:
            sets = [frozenset(s) for s in combinations(sorted(held), min(m, len(held)))]
        for s in sets:
            out[s] = out.get(s, 0) + 1
    return out


def _number(index: dict, p: str, table: str) -> int:
    if p not in index:
        raise InputError(table, "names a patient that the release's truth does not hold")
    return index[p]


def _show(s) -> str:
    return "{" + ", ".join(sorted(map(str, s))) + "}"


def _atoms_by_patient(truth: pd.DataFrame, cols: list[str]) -> dict:
    df = truth[["patient_id"] + cols].astype(str)
    if len(cols) == 1:
        vals = df[cols[0]].str.strip()
    else:
        vals = pd.Series(list(zip(df[cols[0]].str.strip(),
                                  pd.to_numeric(df[cols[1]]).astype(int))), index=df.index)
    return {p: frozenset(g) for p, g in vals.groupby(df["patient_id"], sort=False)}


class _Disassociation:
    """Cluster-level hosting of a set of codes in a disassociated release.

    Each chunk is held as code -> bitmask of the subrecords holding it (bit i
    for subrecord i): codes lie together in some subrecord when the AND of
    their masks is not zero; an item chunk's codes need no such check."""

    def __init__(self, r: Mapping, params):
        doc = r["release"]
        self.atoms = _atoms_by_patient(r["truth"], ["code"])
        mem = r["membership"]
        self.cluster_of = dict(zip(mem["patient_id"].astype(str), mem["cluster"].astype(int)))
        n = len(doc["clusters"])
        # per cluster: code -> [(chunk number, mask)]; chunk numbers are global
        self.masks: list[dict[str, list[tuple[int, int]]]] = [{} for _ in range(n)]
        chunk = 0
        for ci, c in enumerate(doc["clusters"]):
            for ch in c["record_chunks"]:
                _add_chunk(self.masks[ci], chunk, ch["codes"], ch["subrecords"])
                chunk += 1
            for code in c["item_chunk"]:
                self.masks[ci].setdefault(str(code), []).append((-1, 0))
        for sh in doc.get("shared_chunks", []):
            for ci in sh["clusters"]:
                _add_chunk(self.masks[ci], chunk, sh["codes"], sh["subrecords"])
            chunk += 1
        self._cache: dict = {}

    def bind(self, index: dict, n: int) -> None:
        """Global patient numbering: the members of each cluster as indices."""
        self.n = n
        members: list[list[int]] = [[] for _ in self.masks]
        for p, ci in self.cluster_of.items():
            members[ci].append(_number(index, p, "membership"))
        self.members = [np.array(m, dtype=np.int64) for m in members]
        self.offering: dict[str, set] = {}
        for ci, codes in enumerate(self.masks):
            for c in codes:
                self.offering.setdefault(c, set()).add(ci)

    def _cluster_hosts(self, ci: int, s: frozenset) -> bool:
        together: dict[int, int] = {}
        for c in s:
            for chunk, mask in self.masks[ci][c]:
                if chunk >= 0:
                    together[chunk] = together.get(chunk, mask) & mask
        return all(together.values())

    def hosts(self, s: frozenset) -> np.ndarray:
        if not s:
            return np.ones(self.n, dtype=bool)
        if s not in self._cache:
            offer = set.intersection(*(self.offering.get(c, set()) for c in s))
            out = np.zeros(self.n, dtype=bool)
            for ci in offer:
                if self._cluster_hosts(ci, s):
                    out[self.members[ci]] = True
            self._cache[s] = out
        return self._cache[s]


def _add_chunk(masks: dict, chunk: int, codes, subrecords) -> None:
    bits = {str(c): 0 for c in codes}
    for i, sub in enumerate(subrecords):
        for c in sub:
            bits[str(c)] |= 1 << i
    for c, mask in bits.items():
        masks.setdefault(c, []).append((chunk, mask))


class _UGACLIP:
    """Global recoding: a patient's released record is the items of its codes."""

    def __init__(self, r: Mapping, params):
        doc = r["release"]
        self.atoms = _atoms_by_patient(r["truth"], ["code"])
        self.visits = _visit_sets(r["truth"]) if "visit_id" in r["truth"].columns else None
        self.item_of = {str(c): i for i, item in enumerate(doc["items"]) for c in item}
        self.items_held = {p: {self.item_of[c] for c in codes if c in self.item_of}
                           for p, codes in self.atoms.items()}
        self._cache: dict = {}

    def bind(self, index: dict, n: int) -> None:
        self.n = n
        holders: dict[int, list[int]] = {}
        for p, held in self.items_held.items():
            for i in held:
                holders.setdefault(i, []).append(index[p])  # p comes from truth
        self.holders = {i: np.array(v, dtype=np.int64) for i, v in holders.items()}

    def holds(self, p: str, c: frozenset) -> bool:
        """Does the adversary know ``c`` of ``p``: its record (all-visits)
        or one of its visits (single-visit: ``visit_id`` in the truth)?"""
        if self.visits is None:
            return c <= self.atoms[p]
        return any(c <= v for v in self.visits[p])

    def hosts(self, s: frozenset) -> np.ndarray:
        need = frozenset(self.item_of[c] for c in s if c in self.item_of)
        if need not in self._cache:
            out = np.ones(self.n, dtype=bool)
            for i in need:
                mask = np.zeros(self.n, dtype=bool)
                mask[self.holders.get(i, [])] = True
                out &= mask
            self._cache[need] = out
        return self._cache[need]


def _visit_sets(truth: pd.DataFrame) -> dict[str, list[frozenset]]:
    """patient -> the code set of each of its visits."""
    df = truth[["patient_id", "visit_id", "code"]].astype(str)
    out: dict[str, list[frozenset]] = {}
    for (p, _), codes in df.groupby(["patient_id", "visit_id"], sort=False)["code"]:
        out.setdefault(p, []).append(frozenset(codes.str.strip()))
    return out


class _LDA:
    """LDA's adversary knows its target's whole trajectory (k-anonymity of the
    (ICD, Age) sequence, Tamersoy 2011, IV.2) and a pair may have been
    suppressed: a record is a candidate when its released trajectory
    generalizes, in order, pairs of the target's trajectory at that release
    (the single-release verifier's reading, whose matcher is reused)."""

    whole_record = True

    def __init__(self, r: Mapping, params):
        owner = dict(zip(r["map"]["pseudonym"].astype(str), r["map"]["patient_id"].astype(str)))
        self.trajectory = {owner[str(rec["patient_id"])]: tuple((str(c), str(a)) for c, a in
                                                                rec["trajectory"])
                           for rec in r["release"]["records"]}
        truth = r["truth"].assign(patient_id=r["truth"]["patient_id"].astype(str))
        self.original = _lda_originals(truth)
        self.atoms = {p: frozenset(pairs) for p, pairs in self.original.items()}
        self._code_covers = _CodeCover(for_system(params.get("code_system", "icd9cm")))
        self._cache: dict = {}

    def bind(self, index: dict, n: int) -> None:
        self.n = n
        by_traj: dict[tuple, list[int]] = {}
        for p, traj in self.trajectory.items():
            by_traj.setdefault(traj, []).append(_number(index, p, "map"))
        self.groups = [(t, np.array(v, dtype=np.int64)) for t, v in by_traj.items()]

    def hosts(self, target: str) -> np.ndarray:
        if target not in self._cache:
            out = np.zeros(self.n, dtype=bool)
            for traj, members in self.groups:
                if _in_order(traj, self.original[target], self._code_covers,
                             _binary_age_cover):
                    out[members] = True
            self._cache[target] = out
        return self._cache[target]


_VIEWS = {"disassociation": _Disassociation, "ugaclip": _UGACLIP, "lda": _LDA}


def _population_by_code(pop: pd.DataFrame) -> dict:
    """code -> (population record numbers holding it, their counts), and the
    number of records under the key ``None``; memory grows with the
    population's rows, not records x codes."""
    counts = pop["count"].astype(np.int64) if "count" in pop.columns else 1
    t = pd.DataFrame({"p": pop["patient_id"].astype(str), "c": pop["code"].astype(str),
                      "n": counts}).groupby(["c", "p"], as_index=False)["n"].sum()
    number, people = pd.factorize(t["p"])
    out: dict = {None: len(people)}
    for c, rows in t.assign(i=number).groupby("c"):
        out[c] = (rows["i"].to_numpy(), rows["n"].to_numpy())
    return out


def _contained_in(d: dict, holders: dict) -> int:
    """How many population records hold at least ``d[c]`` copies of each code c
    (the sets of holders are kept in ``holders`` by (code, copies))."""
    alive = None
    for c, need in sorted(d.items(), key=lambda cn: len(holders.get(cn[0], ((),))[0])):
        if c not in holders:
            return 0
        if (c, need) not in holders:
            records, counts = holders[c]
            holders[(c, need)] = frozenset(records[counts >= need].tolist())
        have = holders[(c, need)]
        alive = have if alive is None else alive & have
        if not alive:
            return 0
    return holders[None] if alive is None else len(alive)


# --- GCCens: k-map of the union ----------------------------------------------------

def _check_kmap(releases: list[Mapping], k: int) -> tuple[list, int]:
    """Every patient of the new release: its union over releases vs the population."""
    union: dict[str, dict[str, int]] = {}
    for r in releases:
        owner = dict(zip(r["key"]["patient_id"].astype(str), r["key"]["original_id"].astype(str)))
        for rec in r["release"]["records"]:
            held = union.setdefault(owner[str(rec["patient_id"])], {})
            for c, n in rec["codes"].items():
                held[str(c)] = max(held.get(str(c), 0), int(n))
    new_owners = set(releases[-1]["key"]["original_id"].astype(str))
    holders = _population_by_code(releases[-1]["population"])
    bad = []
    for p in sorted(new_owners):
        d = union.get(p, {})
        dis = _contained_in(d, holders)
        if dis < k:
            bad.append(((), tuple(sorted(f"{c}x{n}" for c, n in d.items())), dis))
    return bad, len(new_owners)
