"""The attack harness shared by the methods: overlapping cohorts to attack,
and the linking adversary's intersection attack over set-valued releases.

The linking adversary (docs/threat-model-successive.md, Section 2) links the
records of one patient across releases and knows up to ``m`` atoms of its
target.  For each target it intersects, release by release, the patients
whose released record could hold the atoms, keeping only patients with the
target's presence pattern (who arrived and left when the target did: linkage
shows it).  Each method module supplies, per release, ``candidates(atoms) ->
set of patient ids`` and the patients' atoms; this module does the rest.

This is the attack side.  The validate-time verifier
(``anonymizers.successive.check``) computes the same property by another
route, from the threat model alone; the property tests run the two against
each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError

MAX_SHOWN = 20


@dataclass(frozen=True)
class Cohorts:
    """Two releases' private inputs: ``first`` and ``second`` (long tables of
    the pool's columns), and who persists, leaves and arrives."""

    first: pd.DataFrame
    second: pd.DataFrame
    persisting: np.ndarray
    left: np.ndarray
    arrived: np.ndarray


def overlapping_cohorts(pool: pd.DataFrame, n: int, shared: int, seed: int,
                        gain: float = 0.0) -> Cohorts:
    """Two cohorts of ``n`` patients of ``pool`` (long table with a
    ``patient_id`` column) sharing ``shared`` of them: a scheduled run after
    ``n - shared`` members left and as many arrived.  With ``gain``, that
    share of the persisting patients with two rows or more gained one row
    between the runs (its row is missing from ``first``), as a member who
    gains a code does."""
    if not 0 <= shared <= n:
        raise ParameterError("shared", f"must be in 0..n={n}, got {shared}")
    ids = pd.unique(pool["patient_id"])
    if len(ids) < 2 * n - shared:
        raise ParameterError("n", f"the pool holds {len(ids)} patients; two cohorts of {n} "
                             f"sharing {shared} need {2 * n - shared}")
    rng = np.random.default_rng(seed)
    pick = rng.permutation(ids)[: 2 * n - shared]
    persisting, left, arrived = pick[:shared], pick[shared:n], pick[n:]
    first = pool[pool["patient_id"].isin(pick[:n])]
    second = pool[pool["patient_id"].isin(np.concatenate([persisting, arrived]))]
    if gain > 0:
        rows = first[first["patient_id"].isin(persisting)]
        sizes = rows.groupby("patient_id").size()
        eligible = sizes.index[sizes >= 2].to_numpy()
        gainers = rng.permutation(eligible)[: round(gain * len(eligible))]
        drop = rows[rows["patient_id"].isin(gainers)].groupby("patient_id").sample(
            1, random_state=int(rng.integers(2**31))).index
        first = first.drop(index=drop)
    return Cohorts(first.reset_index(drop=True), second.reset_index(drop=True),
                   persisting, left, arrived)


@dataclass
class ReleaseView:
    """What the adversary reads off one release: each patient's atoms (from
    the truth it is granted) and, for a set of atoms, the patients whose
    released record could hold them."""

    atoms: Mapping[str, frozenset]
    candidates: Callable[[frozenset], frozenset]


def intersection_attack(views: Sequence[ReleaseView], k: int, m: int | None,
                        sets_of: Callable[[frozenset, str], list] | None = None) -> dict:
    """The linking adversary against every patient of the last release (and
    every patient who left: its departure is visible once records are linked).

    For a target holding atoms A in every release it is in, each set S of
    ``m`` atoms of A (or ``sets_of(A)``) is tried; its candidates are the
    patients with the target's presence pattern found by ``candidates(S)`` in
    each of those releases.  Reports the breaches (fewer than k candidates).
    ``sets_of(A, target)`` may name other knowledge (LDA's adversary knows
    the whole trajectory: it returns the target, whose trajectory each
    release's view reads); a breach then shows only its size, never an id.
    """
    pattern: dict[str, tuple] = {}
    for r, v in enumerate(views):
        for p in v.atoms:
            pattern[p] = pattern.get(p, ()) + (r,)
    same: dict[tuple, set] = {}
    for p, sig in pattern.items():
        same.setdefault(sig, set()).add(p)
    memo: dict = {}
    breaches: dict = {}
    targets = exposed = 0
    for p, sig in pattern.items():
        held = frozenset.intersection(*(views[r].atoms[p] for r in sig))
        tried = sets_of(held, p) if sets_of else _m_sets(held, m)
        targets += 1
        hit = False
        for s in tried:
            key = (sig, s)
            if key not in memo:
                found = set(same[sig])
                for r in sig:
                    found &= views[r].candidates(s)
                memo[key] = len(found)
            if memo[key] < k:
                hit = True
                shown = sorted(map(str, s)) if isinstance(s, frozenset) else \
                    [f"a whole trajectory of {len(held)} pairs"]
                b = breaches.setdefault(key, {"releases": [r + 1 for r in sig],
                                              "atoms": shown,
                                              "candidates": memo[key], "targets": 0})
                b["targets"] += 1
        exposed += hit
    found = sorted(breaches.values(), key=lambda b: (b["candidates"], b["atoms"]))
    return {"k": k, "m": m, "targets": targets, "targets_breached": exposed,
            "sets_breached": len(found), "breaches": found[:MAX_SHOWN],
            "breached": bool(found)}


def _m_sets(held: frozenset, m: int) -> list[frozenset]:
    return [frozenset(s) for s in combinations(sorted(held, key=str), min(m, len(held)))]


def pseudonym_links(pseudonyms: Sequence[Mapping[str, str]]) -> dict:
    """How far equal pseudonyms link two releases: ``pseudonyms[r]`` maps a
    source id to its pseudonym in release r.  A release file's seed is fixed,
    so scheduled runs draw from the same generator: a persisting patient
    whose record keeps its row keeps its pseudonym."""
    a, b = pseudonyms[0], pseudonyms[-1]
    both = set(a) & set(b)
    same = sum(a[p] == b[p] for p in both)
    by_name = {v: p for p, v in a.items()}
    shared_names = {v for v in b.values() if v in by_name}
    wrong = sum(by_name[v] != p for p, v in b.items() if v in shared_names)
    return {"persisting": len(both), "persisting_same_pseudonym": same,
            "pseudonyms_in_both": len(shared_names), "pseudonym_links_wrong": wrong,
            "link_precision": (same / len(shared_names)) if shared_names else None}


def random_pool(n_patients: int, n_codes: int, seed: int, max_codes: int = 5,
                ages: bool = False) -> pd.DataFrame:
    """A generated pool of set-valued records (``patient_id, code``): 1 to
    ``max_codes`` codes per patient, drawn with Zipf-like weights so that some
    codes are common and many rare, as in claims.  Codes are the first
    ``n_codes`` 3-digit ICD-9-CM categories (so hierarchies place them); with
    ``ages`` every row also gets an ``age`` (20..79, one per patient plus
    0..4 years per row), as LDA reads."""
    rng = np.random.default_rng(seed)
    vocabulary = _icd9_categories()[:n_codes]
    weights = 1.0 / np.arange(1, n_codes + 1)
    weights /= weights.sum()
    sizes = rng.integers(1, max_codes + 1, n_patients)
    rows = [(f"p{p:05d}", vocabulary[c]) for p, size in enumerate(sizes)
            for c in rng.choice(len(vocabulary), min(size, len(vocabulary)), replace=False,
                                p=weights[:len(vocabulary)] / weights[:len(vocabulary)].sum())]
    pool = pd.DataFrame(rows, columns=["patient_id", "code"])
    if ages:
        base = dict(zip(pd.unique(pool["patient_id"]), rng.integers(20, 80, n_patients)))
        pool["age"] = pool["patient_id"].map(base) + rng.integers(0, 5, len(pool))
    return pool


def _icd9_categories() -> list[str]:
    from anonymizers.hierarchy import icd9cm
    return sorted(c for c in icd9cm().parent if len(c) == 3 and c.isdigit())
