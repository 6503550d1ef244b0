"""MedCo dummy patients by water-filling (Zoveralli, section 3): one plan for all clusters,
water-filling, collision repair, in rounds, until every cluster is flat within 1 (3.3).
Readings chosen and why: docs/methods/medco.md#dummies-generate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.dummies import exact
from anonymizers.dummies.batch import Batch, from_slots, set_hashes
from anonymizers.dummies.bounds import any_profile_bound, profile_relaxation
from anonymizers.dummies.config import DummyConfig
from anonymizers.dummies.inputs import check_clusters, encode_input, widen
from anonymizers.dummies.plan import ClusterState, plan_profiles
from anonymizers.dummies.profiles import Profiles, build_profiles
from anonymizers.dummies.release import assemble
from anonymizers.dummies.repair import repair
from anonymizers.dummies.results import DummyGenerationError, DummyResult, NoReleaseError
from anonymizers.dummies.solver import SolverTimeout
from anonymizers.dummies.waterfill import deficits, fill_slots
from anonymizers.pseudonyms import generator
from anonymizers.records import Records

RESCUE_SAMPLE = 200  # random sets per large profile offered to the rescue program
STAT_KEYS = ("collisions_detected", "repaired_by_reshuffle", "repaired_by_substitution",
             "repaired_by_search", "dropped_profile_full", "dropped_unrepaired",
             "ryser_fallbacks", "profiles_closed", "dropped_unrealisable")
# planned_ratio: the real ratio of the first plan (with plan_optimal, a lower bound on any
# release whose dummies keep their source's profile and duplicate every real patient)
# ratio_bound_*: valid lower bounds on the real ratio of any release on these clusters
# (``bounds.py``): dummies keeping a real profile, every real patient duplicated or not,
# and dummies free to take their codes anywhere


@dataclass
class _Context:
    records: Records
    cluster_of: np.ndarray
    members: list[np.ndarray]
    profiles: Profiles
    keys: np.ndarray
    existing: np.ndarray
    used: np.ndarray
    freq: np.ndarray
    rng: np.random.Generator
    passes: int
    k: np.ndarray            # profiles x clusters: codes per cluster
    first: np.ndarray        # a real patient of each profile
    duplicated: np.ndarray   # real patients that have a dummy
    allow_overflow: bool = False


def generate_dummies(df: pd.DataFrame, clusters, config: DummyConfig) -> DummyResult:
    """Add dummy patients to ``df`` (``patient_id, code``) so that every code of
    each cluster has the same frequency within 1; see docs/methods/medco.md#dummies-generate."""
    raw = encode_input(df)
    cluster_codes = check_clusters(clusters, raw.codes)
    vocab = np.array(sorted(c for cl in cluster_codes for c in cl), dtype=object)
    records = widen(raw, vocab)
    ctx = _context(records, cluster_codes, config)
    stats = dict.fromkeys(STAT_KEYS, 0) | {"planned_ratio": 1.0, "plan_optimal": True}
    batches: list[Batch] = []
    route, rounds = _exact(ctx, batches), 1
    if route is None:
        try:
            route, rounds = "plan", _planned_rounds(ctx, batches, stats)
        except DummyGenerationError as exc:
            if exc.reason != "stalled":
                raise
            ctx, batches = _context(records, cluster_codes, config), []
            if _exact(ctx, batches, exact.RESCUE_LIMIT) is None:
                raise
            route = "exact_after_stall"
    if route != "plan":
        stats["planned_ratio"] = 1 + (len(batches[0].codes) if batches else 0) / records.matrix.nnz
        stats["plan_optimal"] = True
    metrics = _metrics(ctx, _concat(batches), route, rounds, stats)
    released, dummy_map = assemble(records, _concat(batches),
                                   generator(config.pseudonym_key, config.seed, ctx.rng))
    return DummyResult(released=released, dummy_map=dummy_map, metrics=metrics)


def _context(records: Records, cluster_codes: list[np.ndarray], config: DummyConfig) -> _Context:
    vocab = records.codes
    members = [np.searchsorted(vocab, c) for c in cluster_codes]
    cluster_of = np.empty(len(vocab), dtype=np.int64)
    for j, m in enumerate(members):
        cluster_of[m] = j
    rng = np.random.default_rng(config.seed)
    keys = rng.integers(0, 2 ** 63, size=len(vocab), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    profiles = build_profiles(records.matrix, cluster_of, members)
    m = records.matrix
    real_h = set_hashes(m.indptr, m.indices, keys)
    uniq, first_of_set = np.unique(real_h, return_index=True)
    used = np.bincount(profiles.of[first_of_set], minlength=len(profiles.possible))
    _, first = np.unique(profiles.of, return_index=True)
    k = np.asarray(profiles.counts[first].todense(), dtype=np.int64).reshape(len(first), -1)
    return _Context(records, cluster_of, members, profiles, keys, uniq, used.astype(np.int64),
                    records.support(), rng, config.repair_passes, k, first,
                    np.zeros(records.n_records, dtype=bool))


def _exact(ctx: _Context, batches: list, limit: int | None = None) -> str | None:
    """Solve small inputs exactly (``exact.py``, at most ``limit`` listed sets);
    None when the input is too large or the solver is out of time."""
    cap = ctx.profiles.possible - ctx.used
    cand = exact.candidates(ctx.profiles, ctx.first, cap, ctx.keys, ctx.existing, limit)
    if cand is None:
        return None
    lo = np.minimum(_undup_per_profile(ctx), cap)
    try:
        chosen = exact.solve(cand, ctx.freq, ctx.cluster_of, len(ctx.members), lo)
    except SolverTimeout:
        return None
    if chosen is None:
        raise NoReleaseError(_describe_none(ctx, "over every unused code set of every profile"))
    _commit_sets(ctx, cand, chosen, batches)
    return "exact"


def _commit_sets(ctx: _Context, cand, chosen: list[int], batches: list) -> None:
    """Commit the chosen candidate sets as dummies of their profiles."""
    prof = cand.profile[chosen]
    src = _sources(ctx, np.bincount(prof, minlength=len(ctx.profiles.possible)))
    sets = [cand.sets[i] for i in np.array(chosen, dtype=np.int64)[np.argsort(prof, kind="stable")]]
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    _commit(ctx, Batch(src, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                       np.concatenate(sets).astype(np.int64) if sets else np.zeros(0, np.int64)),
            batches)


def _rescue(ctx: _Context, batches: list) -> bool:
    """When the plan stalls: the exact program from the current state, over
    every unused set of the small profiles and ``RESCUE_SAMPLE`` random ones
    of each large profile.  True when it found the remaining dummies."""
    cap = ctx.profiles.possible - ctx.used
    cand = exact.candidates(ctx.profiles, ctx.first, cap, ctx.keys, ctx.existing,
                            sample=(RESCUE_SAMPLE, ctx.rng))
    try:
        chosen = exact.solve(cand, ctx.freq, ctx.cluster_of, len(ctx.members), 0 * cap)
    except SolverTimeout:
        return False
    if chosen is None:
        return False
    _commit_sets(ctx, cand, chosen, batches)
    return True


def _planned_rounds(ctx: _Context, batches: list, stats: dict) -> int:
    """Plan, fill and repair until every cluster is flat (at least once while a
    real patient can still be duplicated); returns the rounds."""
    closed = np.zeros(len(ctx.profiles.possible), dtype=bool)
    rounds, waived = 0, False
    while not _flat(ctx) or (rounds == 0 and _can_duplicate(ctx)):
        cap = np.where(closed, 0, ctx.profiles.possible - ctx.used)
        plan = (_plan(ctx, cap, batches, waived=waived)
                or _plan(ctx, cap, batches, sufficient=False, waived=waived))
        if plan is None:
            if rounds > 0 and _rescue(ctx, batches):
                return rounds + 1
            raise _no_plan(ctx, batches, first=rounds == 0 and not closed.any())
        if rounds == 0:
            stats["planned_ratio"] = 1 + float(ctx.k.sum(axis=1) @ plan.x) / ctx.records.matrix.nnz
            stats["plan_optimal"] = plan.optimal
        src = _sources(ctx, plan.x)
        kept = _commit(ctx, _make_batch(ctx, src, plan.level, stats), batches)
        if kept.n == 0 and not waived:  # first stop asking for duplicates (progress)
            waived = True
        elif kept.n == 0:  # nothing could be made new: close those profiles (progress)
            hit = np.unique(ctx.profiles.of[src])
            closed[hit] = True
            stats["profiles_closed"] += len(hit)
        rounds += 1
    return rounds


def _states(ctx: _Context) -> list[ClusterState]:
    return [ClusterState(ctx.freq[m]) for m in ctx.members]


def _can_duplicate(ctx: _Context) -> bool:
    return bool(_undup_per_profile(ctx) @ (ctx.used < ctx.profiles.possible))


def _plan(ctx: _Context, cap: np.ndarray, batches: list, sufficient: bool = True,
          waived: bool = False):
    """The plan with sufficient Gale-Ryser rows; with ``sufficient=False`` the
    necessary ones, which the construction may fail to realise (then the
    round keeps nothing).  ``waived``: duplicates are no longer asked for."""
    lo = 0 * cap if waived else np.minimum(_undup_per_profile(ctx), cap)
    try:
        return plan_profiles(ctx.k, lo, cap, _states(ctx), sufficient)
    except SolverTimeout as exc:
        raise _failure(ctx, _unflat(ctx), batches, "solver_time_limit", str(exc)) from None


def _unflat(ctx: _Context) -> int:
    return next((j for j, m in enumerate(ctx.members) if np.ptp(ctx.freq[m]) > 1), 0)


def _no_plan(ctx: _Context, batches: list, first: bool):
    """The necessary plan is infeasible: a proof in the first round, before
    any profile was closed and any dummy made; otherwise not."""
    if first:
        return NoReleaseError(_describe_none(ctx, "over the counts of dummies per size profile"))
    return _failure(ctx, _unflat(ctx), batches, "stalled",
                    "no plan is left after closing the profiles whose dummies could not "
                    "be made new (this is not a proof that no release exists)")


def _describe_none(ctx: _Context, how: str) -> str:
    spread = [f"{int(ctx.freq[m].min())}..{int(ctx.freq[m].max())}" for m in ctx.members]
    return (f"no release exists: no choice of dummies (each keeping its source's codes per "
            f"cluster, none repeating a patient's code set) makes every cluster flat within 1 "
            f"(proved {how}; code frequencies per cluster {', '.join(spread)})")


def _undup_per_profile(ctx: _Context) -> np.ndarray:
    return np.bincount(ctx.profiles.of[~ctx.duplicated], minlength=len(ctx.profiles.possible))


def _sources(ctx: _Context, x: np.ndarray) -> np.ndarray:
    """``x[p]`` source patients of profile p, grouped by profile: patients
    without a dummy first (at random), then random patients of the profile."""
    of, rng = ctx.profiles.of, ctx.rng
    order = np.lexsort((rng.random(len(of)), ctx.duplicated, of))
    start = np.searchsorted(of[order], np.arange(len(x)))
    count = np.bincount(of, minlength=len(x))
    fresh = np.minimum(x, _undup_per_profile(ctx))
    rest = x - fresh
    out = np.empty(int(x.sum()), dtype=np.int64)
    at = np.concatenate([[0], np.cumsum(x)])
    for p in np.flatnonzero(x):  # profiles are few next to patients
        a = at[p]
        out[a:a + fresh[p]] = order[start[p]:start[p] + fresh[p]]
        out[a + fresh[p]:at[p + 1]] = order[start[p] + rng.integers(0, count[p], size=rest[p])]
    return out


def _make_batch(ctx: _Context, src: np.ndarray, level: np.ndarray, stats: dict) -> Batch:
    """Dummies made from ``src``: each cluster's slots poured up to its planned
    level and shuffled, then repaired."""
    counts = ctx.profiles.counts[src].tocsc()
    owners, codes = [], []
    for j, cl in enumerate(ctx.members):
        rows = counts.indices[counts.indptr[j]:counts.indptr[j + 1]]
        if len(rows) == 0:
            continue
        sizes = counts.data[counts.indptr[j]:counts.indptr[j + 1]]
        add = deficits(ctx.freq[cl], int(level[j]), int(sizes.sum()), ctx.rng)
        try:
            local, fell_back = fill_slots(add, sizes, ctx.rng)
        except ValueError:  # a plan with the necessary rows only, not realisable
            stats["dropped_unrealisable"] += len(src)
            return Batch(src[:0], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        stats["ryser_fallbacks"] += int(fell_back)
        owners.append(np.repeat(rows, sizes))
        codes.append(cl[local])
    if not owners:
        return Batch(src[:0], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    batch = from_slots(src, np.concatenate(owners), np.concatenate(codes))
    return repair(batch, ctx, stats)


def _commit(ctx: _Context, batch: Batch, batches: list, profile: np.ndarray | None = None) -> Batch:
    """Add ``batch`` to the release.  ``profile``: each dummy's own profile
    (-1 for one no real patient has), when it may differ from its source's
    (carried dummies re-sourced by size, ``persist.carry``); a set counts
    against the profile it fills, or that profile's unused sets are miscounted."""
    ctx.freq = ctx.freq + np.bincount(batch.codes, minlength=len(ctx.freq))
    ctx.existing = np.sort(np.concatenate([ctx.existing, batch.hashes(ctx.keys)]))
    prof = ctx.profiles.of[batch.src] if profile is None else profile[profile >= 0]
    ctx.used = ctx.used + np.bincount(prof, minlength=len(ctx.used))
    ctx.duplicated[batch.src] = True
    batches.append(batch)
    return batch


def _flat(ctx: _Context) -> bool:
    return all(np.ptp(ctx.freq[m]) <= 1 for m in ctx.members)


def _concat(batches: list[Batch]) -> Batch:
    if not batches:
        return Batch(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                     np.zeros(0, dtype=np.int64))
    sizes = np.concatenate([np.diff(b.indptr) for b in batches])
    return Batch(np.concatenate([b.src for b in batches]),
                 np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                 np.concatenate([b.codes for b in batches]))


def _failure(ctx: _Context, j: int, batches: list, reason: str, why: str) -> DummyGenerationError:
    codes = ctx.records.codes
    cluster = sorted(codes[ctx.members[j]].tolist())
    d = _concat(batches)
    partial = [(ctx.records.patients[s], frozenset(codes[d.codes[a:b]].tolist()))
               for s, a, b in zip(d.src, d.indptr[:-1], d.indptr[1:])]
    f = ctx.freq[ctx.members[j]]
    return DummyGenerationError(
        f"cannot flatten cluster {j} ({len(cluster)} codes, frequencies {f.min()}..{f.max()}): "
        f"{why}", reason, cluster, partial)


def _metrics(ctx: _Context, dummies: Batch, route: str, rounds: int, stats: dict) -> dict:
    real = ctx.records
    n_real, n_dum = real.n_records, dummies.n
    real_occ = int(real.matrix.nnz)
    support = real.support()
    theo = sum(len(m) * int(support[m].max()) for m in ctx.members)
    levels = [[int(ctx.freq[m].min()), int(ctx.freq[m].max())] for m in ctx.members]
    return {
        "n_real_patients": n_real, "n_dummies": n_dum,
        "n_released_patients": n_real + n_dum,
        "released_over_real_patients": (n_real + n_dum) / n_real,
        "dummies_per_real_patient": n_dum / n_real,
        "real_code_occurrences": real_occ,
        "released_code_occurrences": real_occ + len(dummies.codes),
        "theoretical_ratio": theo / real_occ,
        "real_ratio": (real_occ + len(dummies.codes)) / real_occ,
        # section 3.2's aim, a real ratio close to the theoretical one, as one figure
        "real_over_theoretical": (real_occ + len(dummies.codes)) / theo,
        "real_patients_without_dummy": int((~ctx.duplicated).sum()),
        "route": route, "water_filling_rounds": rounds, "cluster_levels": levels,
        "flat": all(hi - lo <= 1 for lo, hi in levels), **stats,
        "ratio_bound_profiles": profile_relaxation(real.matrix, ctx.cluster_of).ratio,
        "ratio_bound_profiles_duplicated": profile_relaxation(real.matrix, ctx.cluster_of,
                                                              duplicates=True).ratio,
        "ratio_bound_any_profile": any_profile_bound(support, ctx.cluster_of),
    }
