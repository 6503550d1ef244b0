"""Water-filling of one cluster's code slots (Zoveralli 3.2), in bulk: codes raised to T - 1, the
rest to T at random, shuffled into the dummies; Ryser's construction when swaps leave repeats.
Readings chosen and why: docs/methods/medco.md#dummies-waterfill."""

from __future__ import annotations

import numpy as np

from anonymizers.dummies.arrays import first_per_group, member

LARGE = 8  # dummies with at least this many slots in a cluster take their codes first


def deficits(freq: np.ndarray, level: int, slots: int, rng: np.random.Generator) -> np.ndarray:
    """Occurrences each code receives from ``slots`` so that the cluster ends at
    ``level`` within 1: ``level - 1 - freq`` each, the rest one each to codes
    still below ``level``, highest frequency first (ties at random).

    That choice makes the deficits as even as flatness allows; in a cluster
    already flat within 1 they differ by at most 1, and such counts are
    majorized by those of any dummies of at most ``len(freq)`` codes each, so
    Gale-Ryser holds without a row in the plan.  ``slots`` must lie in the
    plan's band.
    """
    freq = np.asarray(freq, dtype=np.int64)
    add = np.maximum(0, level - 1 - freq)
    rest = slots - int(add.sum())
    room = np.flatnonzero(freq + add < level)
    if rest < 0 or rest > len(room):
        raise ValueError(f"{slots} slots cannot bring the cluster to level {level} within 1")
    order = np.lexsort((rng.random(len(room)), -freq[room]))
    add[room[order[:rest]]] += 1
    return add


def fill_slots(add: np.ndarray, sizes: np.ndarray, rng: np.random.Generator,
               max_passes: int = 50) -> tuple[np.ndarray, bool]:
    """Local code index of every slot, dummy-major (``sizes[0]`` slots of dummy 0
    first), code ``c`` used ``add[c]`` times, no dummy holding a code twice.

    Large dummies take their codes first (Ryser's step); the other slots get
    the rest of the multiset shuffled, then repeats are swapped away.  Returns
    the codes and whether the whole batch fell back to Ryser's construction.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    add = np.asarray(add, dtype=np.int64)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    start = np.concatenate([[0], np.cumsum(sizes)])
    codes = np.empty(int(sizes.sum()), dtype=np.int64)
    left = add.copy()
    big = np.flatnonzero(sizes >= LARGE)
    for d in big[np.argsort(-sizes[big], kind="stable")]:
        pick = _most_left(left, int(sizes[d]), rng)
        codes[start[d]:start[d + 1]] = pick
        left[pick] -= 1
    if (left < 0).any():
        return ryser(add, sizes, rng), True
    small = np.ones(len(sizes), dtype=bool)
    small[big] = False
    slots = np.flatnonzero(small[owner])
    codes[slots] = rng.permutation(np.repeat(np.arange(len(add)), left))
    if dedupe_by_swaps(owner, codes, len(add), rng, max_passes):
        return codes, False
    return ryser(add, sizes, rng), True


def ryser(add: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ryser's construction: each dummy in turn takes the ``sizes[d]`` codes
    with the most occurrences left (ties at random).  It succeeds whenever the
    Gale-Ryser condition holds, whatever the order of the dummies."""
    left = np.asarray(add, dtype=np.int64).copy()
    start = np.concatenate([[0], np.cumsum(sizes)])
    codes = np.empty(int(start[-1]), dtype=np.int64)
    for d in range(len(sizes)):
        pick = _most_left(left, int(sizes[d]), rng)
        if (left[pick] <= 0).any():
            raise ValueError("the code counts admit no assignment to these dummies "
                             "(Gale-Ryser fails)")
        codes[start[d]:start[d + 1]] = pick
        left[pick] -= 1
    return codes


def _most_left(left: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct codes with the most occurrences left, ties at random."""
    key = left + rng.random(len(left)) * 0.5
    return np.argpartition(-key, k - 1)[:k]


def repeated_slots(owner: np.ndarray, codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Slots whose (owner, code) pair already occurs at an earlier slot."""
    key = owner.astype(np.int64) * n_codes + codes
    order = np.argsort(key, kind="stable")
    dup = np.zeros(len(key), dtype=bool)
    dup[order[1:]] = key[order[1:]] == key[order[:-1]]
    return np.flatnonzero(dup)


def dedupe_by_swaps(owner: np.ndarray, codes: np.ndarray, n_codes: int,
                    rng: np.random.Generator, max_passes: int) -> bool:
    """Swap repeated slots with random other slots until no owner repeats a code.

    Works in place on ``codes``.  Every pass applies at once the valid swaps
    in which the partner's owner is touched by no other swap and an owner
    with repeats receives distinct codes.  Returns True on success.
    """
    for _ in range(max_passes):
        dup = repeated_slots(owner, codes, n_codes)
        if len(dup) == 0:
            return True
        partner = rng.integers(0, len(codes), size=len(dup))
        keys = np.sort(owner.astype(np.int64) * n_codes + codes)
        gets = owner[dup].astype(np.int64) * n_codes + codes[partner]
        ok = ((codes[partner] != codes[dup]) & (owner[partner] != owner[dup])
              & ~member(keys, gets)
              & ~member(keys, owner[partner].astype(np.int64) * n_codes + codes[dup]))
        ok &= ~member(np.sort(owner[dup]), owner[partner])
        dup, partner, gets = dup[ok], partner[ok], gets[ok]
        once = first_per_group(owner[partner]) & first_per_group(gets)
        dup, partner = dup[once], partner[once]
        codes[dup], codes[partner] = codes[partner], codes[dup].copy()
    return len(repeated_slots(owner, codes, n_codes)) == 0
