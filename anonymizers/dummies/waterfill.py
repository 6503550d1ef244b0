"""Water-filling of one cluster's code slots (Zoveralli, section 3.2), in bulk.

A batch of dummies brings ``sizes[d]`` code slots each to a cluster.  The
slots are poured on the cluster's histogram lowest code first ("the codes
needing more frequency"), each code taking at most one slot per dummy and
no more than dummies of these sizes can hold without repeating a code
(Gale-Ryser); the resulting multiset of codes is shuffled into the dummies
("randomly shuffled ... a subset of them is associated to the new dummy
patient"), and a dummy that drew a code twice swaps one copy with another
dummy's slot.  Swaps keep every code's count, so the histogram stays as
poured.
"""

from __future__ import annotations

import numpy as np

from anonymizers.dummies.arrays import first_per_group, member


def water_levels(freq: np.ndarray, slots: int, cap: int,
                 rng: np.random.Generator | None) -> np.ndarray:
    """How many of ``slots`` occurrences each code receives, lowest first.

    A code receives at most ``cap`` (one per dummy); ``slots <= cap * len(freq)``
    must hold.  The result raises the histogram to a level ``L`` (codes below
    it reach ``L``, capped codes excepted) and the leftover goes, one each, to
    codes at ``L``: those that took least, ties at random (in code order when
    ``rng`` is None).
    """
    freq = np.asarray(freq, dtype=np.int64)
    if slots <= 0:
        return np.zeros(len(freq), dtype=np.int64)
    lo, hi = int(freq.min()), int(freq.max()) + cap
    while lo < hi:  # largest L with total(L) <= slots
        mid = (lo + hi + 1) // 2
        if _poured(freq, mid, cap).sum() <= slots:
            lo = mid
        else:
            hi = mid - 1
    add = _poured(freq, lo, cap)
    rest = slots - int(add.sum())
    if rest:  # codes at L that took least so far first, so that counts spread
        room = np.flatnonzero((freq + add == lo) & (add < cap))
        tie = np.zeros(len(room)) if rng is None else rng.random(len(room))
        add[room[np.lexsort((tie, add[room]))[:rest]]] += 1
    return add


def feasible_pour(freq: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Water levels for dummies of ``sizes`` that some assignment can realise.

    Dummies with distinct codes can take counts ``a`` only if, for every t,
    the t largest counts sum to at most ``sum_d min(sizes[d], t)`` (Gale-Ryser).
    Pouring lowest first can break that (a few deep codes would need more
    distinct dummies than the sizes allow), so the per-code cap is lowered,
    by bisection, to the largest that keeps the condition.
    """
    slots, n = int(sizes.sum()), len(freq)
    reach = np.cumsum(np.bincount(sizes)[::-1])[::-1][1:]  # dummies with size >= t
    bound = np.cumsum(reach)

    def admits(cap: int) -> bool:
        top = np.cumsum(np.sort(water_levels(freq, slots, cap, None))[::-1])
        return bool((top <= bound[np.minimum(np.arange(n), len(bound) - 1)]).all())

    lo, hi = -(-slots // n), len(sizes)
    if not admits(hi):
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if admits(mid) else (lo, mid - 1)
    return water_levels(freq, slots, hi if admits(hi) else lo, rng)


def _poured(freq: np.ndarray, level: int, cap: int) -> np.ndarray:
    return np.minimum(cap, np.maximum(0, level - freq))


def fill_slots(freq: np.ndarray, sizes: np.ndarray, rng: np.random.Generator,
               max_passes: int = 50) -> tuple[np.ndarray, int]:
    """Local code index of every slot, dummy-major (``sizes[0]`` slots of dummy 0 first).

    Large dummies (``_large``) take their codes first, one at a time, among
    the codes with the most occurrences left (Ryser's construction, which
    finds distinct codes whenever the pour allows it); the other slots get
    the rest of the multiset shuffled, then repeats are swapped away.
    Returns the codes and the number of slots whose code had to be replaced
    (by the lowest code the dummy lacks) because no swap removed a repeat.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    freq = np.asarray(freq, dtype=np.int64)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    add = feasible_pour(freq, sizes, rng)
    start = np.concatenate([[0], np.cumsum(sizes)])
    codes = np.empty(int(sizes.sum()), dtype=np.int64)
    left = add.copy()
    big = _large(sizes, int((add > 0).sum()))
    for d in big:
        pick = _most_left(left, int(sizes[d]), rng)
        codes[start[d]:start[d + 1]] = pick
        left[pick] -= 1
    if (left < 0).any():  # the pour admits no assignment: shuffle everything
        big, left = big[:0], add.copy()
    small = np.ones(len(sizes), dtype=bool)
    small[big] = False
    slots = np.flatnonzero(small[owner])
    codes[slots] = rng.permutation(np.repeat(np.arange(len(freq)), np.maximum(left, 0)))
    if not dedupe_by_swaps(owner, codes, len(freq), rng, max_passes):
        return codes, _replace_repeats(owner, codes, freq + add)
    return codes, 0


def _large(sizes: np.ndarray, n_poured: int, most: int = 5000) -> np.ndarray:
    """Dummies assigned one by one: at least 5% of the poured codes, or 8,
    largest first, at most ``most`` of them."""
    order = np.argsort(-sizes, kind="stable")
    return order[sizes[order] >= max(8, n_poured // 20)][:most]


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


def _replace_repeats(owner: np.ndarray, codes: np.ndarray, level: np.ndarray) -> int:
    """Last resort: give each repeated slot the lowest-level code its owner
    lacks, owner by owner (``owner`` is sorted: an owner's slots are a range)."""
    level = level.copy()
    dup = repeated_slots(owner, codes, len(level))
    for o in np.unique(owner[dup]):
        lo, hi = np.searchsorted(owner, [o, o + 1])
        slots = dup[owner[dup] == o]
        free = np.ones(len(level), dtype=bool)
        free[codes[lo:hi]] = False
        cand = np.flatnonzero(free)
        new = cand[np.argsort(level[cand], kind="stable")[:len(slots)]]
        np.subtract.at(level, codes[slots], 1)
        level[new] += 1
        codes[slots] = new
    return len(dup)
