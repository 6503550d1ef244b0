"""Repairs that change a colliding dummy's codes (steps 3-4 of ``repair``).

Both keep the dummy's number of codes in every cluster and use only codes
with room under their cluster's top, so that a fix never raises a top (it
may leave a code one short, which the next round's plan fills).
"""

from __future__ import annotations

import numpy as np

from anonymizers.dummies.arrays import member
from anonymizers.dummies.batch import Batch

MAX_SLOTS = 8  # slots of one dummy tried by substitution


def room_left(batch: Batch, ctx) -> np.ndarray:
    """How many more occurrences each code takes before passing its cluster's
    top, with every slot of the batch poured (colliders included: a fix
    moves a collider's occurrence from one code to another)."""
    poured = ctx.freq + np.bincount(batch.codes, minlength=len(ctx.freq))
    tops = np.zeros(len(ctx.members), dtype=np.int64)
    np.maximum.at(tops, ctx.cluster_of, poured)
    return tops[ctx.cluster_of] - poured


def substitute(batch: Batch, col: np.ndarray, ctx, room: np.ndarray) -> int:
    """Replace one code of each colliding dummy so that its set is new.

    Returns how many dummies were fixed; ``room`` is updated in place.
    """
    h = batch.hashes(ctx.keys)
    others = np.sort(h[~col])
    fresh: set[int] = set()
    fixed = 0
    for d in np.flatnonzero(col):
        a, b = batch.indptr[d], batch.indptr[d + 1]
        for s in ctx.rng.permutation(b - a)[:MAX_SLOTS]:
            new = _one_change(batch.codes[a:b], s, h[d], others, fresh, room, ctx)
            if new is not None:
                room[batch.codes[a + s]] += 1
                room[new] -= 1
                batch.codes[a + s] = new
                fixed += 1
                break
    return fixed


def _one_change(codes: np.ndarray, s: int, h: np.uint64, others: np.ndarray,
                fresh: set, room: np.ndarray, ctx) -> int | None:
    """A code to put in slot ``s`` that makes the set new, or None."""
    old = codes[s]
    cand = ctx.members[ctx.cluster_of[old]]
    cand = cand[~member(np.sort(codes), cand)]
    if not ctx.allow_overflow:
        cand = cand[room[cand] >= 1]
    if len(cand) == 0:
        return None
    hn = (ctx.keys[cand] - ctx.keys[old]) + h
    free = ~member(ctx.existing, hn) & ~member(others, hn)
    free &= np.array([int(x) not in fresh for x in hn], dtype=bool)
    if not free.any():
        return None
    i = _best(room[cand], free, ctx.rng)
    fresh.add(int(hn[i]))
    return int(cand[i])


def _best(room: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> int:
    """A random index among the allowed ones with the most room."""
    score = np.where(allowed, room, np.iinfo(np.int64).min)
    top = np.flatnonzero(score == score.max())
    return int(rng.choice(top))


def search(batch: Batch, col: np.ndarray, ctx, room: np.ndarray, limit: int) -> int:
    """Give colliding dummies of profiles admitting at most ``limit`` sets an
    unused set passing no cluster top, at random."""
    prof = ctx.profiles.of[batch.src]
    hashes = batch.hashes(ctx.keys)
    others = np.sort(hashes[~col])
    found = 0
    for p in sorted(set(prof[col].tolist())):
        members = np.flatnonzero(col & (prof == p))
        sets = ctx.profiles.enumerate(batch.src[members[0]], limit)
        if sets is None:
            continue
        hs = ctx.keys[sets].sum(axis=1, dtype=np.uint64)
        free = sets[~member(ctx.existing, hs) & ~member(others, hs)]
        for d in members:
            if len(free) == 0:
                break
            mine = batch.codes[batch.indptr[d]:batch.indptr[d + 1]]
            room[mine] += 1  # as if the dummy's own codes were taken back
            fit = np.flatnonzero((room[free] >= 1).all(axis=1))
            if len(fit) == 0:
                room[mine] -= 1
                continue
            i = int(ctx.rng.choice(fit))
            batch.set_row(d, free[i])
            room[free[i]] -= 1
            free = np.delete(free, i, axis=0)
            found += 1
    return found
