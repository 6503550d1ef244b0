"""The collision-fixing routine of Zoveralli 3.2: drop, reshuffle, substitute one code, exact
search; what still collides is dropped and counted.
Readings chosen and why: docs/methods/medco.md#dummies-repair."""

from __future__ import annotations

import numpy as np

from anonymizers.dummies.arrays import member
from anonymizers.dummies.batch import Batch, colliding
from anonymizers.dummies.fixes import room_left, search, substitute
from anonymizers.dummies.waterfill import dedupe_by_swaps, repeated_slots

SEARCH_LIMIT = 100_000
STALL = 3  # reshuffle passes in a row without progress before giving up


def repair(batch: Batch, ctx, stats: dict) -> Batch:
    """The batch without repeats: repaired where possible, the rest dropped.

    ``ctx`` provides ``keys`` (Zobrist keys), ``existing`` (sorted hashes of
    real sets and accepted dummies), ``used`` (distinct sets per profile),
    ``profiles``, ``cluster_of``, ``members``, ``freq``, ``rng``, ``passes``
    and ``allow_overflow`` (substitution may pass a cluster's top).
    """
    col = colliding(batch.hashes(ctx.keys), ctx.existing)
    stats["collisions_detected"] += int(col.sum())
    full = _profile_full(batch, col, ctx)
    stats["dropped_profile_full"] += int(full.sum())
    batch, col = batch.keep(~full), col[~full]
    before, stall = int(col.sum()), 0
    for _ in range(ctx.passes):
        if not col.any() or stall >= STALL:
            break
        new_col = _reshuffle_pass(batch, col, ctx)
        stall = 0 if new_col.sum() < col.sum() else stall + 1
        col = new_col
    stats["repaired_by_reshuffle"] += before - int(col.sum())
    if col.any():
        room = room_left(batch, ctx)
        stats["repaired_by_substitution"] += substitute(batch, col, ctx, room)
        col = colliding(batch.hashes(ctx.keys), ctx.existing, priority=col)
    if col.any():
        stats["repaired_by_search"] += search(batch, col, ctx, room, SEARCH_LIMIT)
        col = colliding(batch.hashes(ctx.keys), ctx.existing, priority=col)
    stats["dropped_unrepaired"] += int(col.sum())
    return batch.keep(~col)


def _profile_full(batch: Batch, col: np.ndarray, ctx) -> np.ndarray:
    prof = ctx.profiles.of[batch.src]
    taken = ctx.used + np.bincount(prof[~col], minlength=len(ctx.used))
    return col & (taken[prof] >= ctx.profiles.possible[prof])


def _reshuffle_pass(batch: Batch, col: np.ndarray, ctx) -> np.ndarray:
    """One pass: shuffle the pool's slots within clusters; keep it if it helps."""
    rng = ctx.rng
    ok = np.flatnonzero(~col)
    partners = rng.choice(ok, size=min(len(ok), max(16, int(col.sum()))), replace=False)
    in_pool = col.copy()
    in_pool[partners] = True
    owner = batch.owner()
    slots = np.flatnonzero(in_pool[owner])
    old = batch.codes[slots].copy()
    cl = ctx.cluster_of[old]
    shuffled = np.lexsort((rng.random(len(slots)), cl))
    grouped = np.argsort(cl, kind="stable")
    batch.codes[slots[grouped]] = old[shuffled]
    _undo_repeats(batch, owner, slots, old, ctx)
    h = batch.hashes(ctx.keys)
    pool = np.flatnonzero(in_pool)
    new_col = col & ~in_pool
    new_col[pool] = colliding(h[pool], ctx.existing) | member(np.sort(h[~in_pool]), h[pool])
    if new_col.sum() < col.sum():
        return new_col
    batch.codes[slots] = old
    return col


def _undo_repeats(batch: Batch, owner: np.ndarray, slots: np.ndarray, old: np.ndarray, ctx) -> None:
    """Swap away repeats inside a dummy, cluster by cluster; where that fails,
    put that cluster's pooled slots back as they were."""
    n_codes = len(ctx.keys)
    dup = repeated_slots(owner[slots], batch.codes[slots], n_codes)
    for j in set(ctx.cluster_of[batch.codes[slots[dup]]].tolist()):
        mine = ctx.cluster_of[batch.codes[slots]] == j
        sub = slots[mine]
        codes = batch.codes[sub]
        if dedupe_by_swaps(owner[sub], codes, n_codes, ctx.rng, 20):
            batch.codes[sub] = codes
        else:
            batch.codes[sub] = old[mine]
