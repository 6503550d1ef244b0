"""Exchanges after UGACLIP's restore pass (not a line of Algorithm 2; Loukides et al., PNAS 2010,
SI): suppress one open code, give back two or more suppressed ones, or one that occurs in more
records (a swap), every move checked exactly.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-exchange."""

from __future__ import annotations

import numpy as np

MAX_BLOCKING = 3  # a return blocked by more constraints than this is not tried


def exchange_pass(run) -> None:
    """Rounds of exchanges, each followed by the restore pass, until a round
    keeps none.  ``run`` is an ``algorithm.Run`` after ``execute``'s restore.
    A kept move lowers (suppressed codes, suppressed occurrences)
    lexicographically, so the rounds end."""
    while True:
        plan = _candidates(run)
        kept = 0
        for x in sorted(plan, key=lambda x: (-len(plan[x]), x)):
            if not run.state.suppressed[x]:
                kept += _try_exchange(run, x, sorted(plan[x]))
        if not kept:
            return
        run._restore_pass()


def _candidates(run) -> dict[int, set]:
    """x -> suppressed codes whose return x's suppression may unblock.  For
    each suppressed c and each place it could go, the constraints that would
    then fail; x must lie in every one of them (at most ``MAX_BLOCKING``) as
    the only open code of p in its item."""
    s = run.state
    plan: dict[int, set] = {}
    for c in np.flatnonzero(s.suppressed[:s.n_codes]).tolist():
        ids = run.constraints_of(c)
        for into in run.restore_targets(c) + [None]:
            s.restore(c, into)
            support = s.supports(run.padded, run.lengths, ids)
            failing = ids[~run.vacuous[ids] & (support < run.k)]
            if 0 < len(failing) <= MAX_BLOCKING:
                for x in set.intersection(*(_helpers(run, p, c) for p in failing)):
                    plan.setdefault(x, set()).add(c)
            s.suppress(c)
    return plan


def _helpers(run, p: int, c: int) -> set:
    """Open codes of p, other than c, alone among p's open codes in their item."""
    codes = run._open_codes(p)
    reps, counts = np.unique(run.state.rep[codes], return_counts=True)
    alone = set(reps[counts == 1].tolist())
    return {int(x) for x in codes if x != c and int(run.state.rep[x]) in alone}


def _try_exchange(run, x: int, blocked: list) -> int:
    """Suppress x, give back what comes back of ``blocked``; keep the move
    (1) if at least two codes came back, or one that more records hold than
    hold x (a swap: as many codes suppressed, fewer occurrences), else undo
    it (0).  A run realising its plan (``run.realise``) also undoes a move
    whose returns occur less than x: then neither suppressed codes nor
    suppressed occurrences ever rise above the plan's
    (docs/methods/ugaclip.md#ugaclip-realise)."""
    s = run.state
    old_item = s.suppress(x)
    rest = [m for m in old_item if m != x]
    ids = run.constraints_of(old_item)
    if not _all_hold(run, ids):
        s.restore(x, rest[0] if rest else None)
        return 0
    back = []
    for c in blocked:
        if s.suppressed[c]:
            placed = run.try_restore(c)
            if placed is not None:
                back.append((c, placed))
    swap = len(back) == 1 and s.code_support[back[0][0]] > s.code_support[x]
    dearer = run.realise and sum(int(s.code_support[c]) for c, _ in back) < s.code_support[x]
    if (len(back) < 2 and not swap) or dearer:
        for c, _ in reversed(back):
            s.suppress(c)
        s.restore(x, rest[0] if rest else None)
        return 0
    run.trace.append(("swap" if swap else "exchange", x, [c for c, _ in back]))
    run._changed(old_item, merged=False)
    for c, (into, item, support) in back:
        run._changed(item, merged=True)
    if swap:
        run.counts["swaps"] += 1
    else:
        run.counts["exchanges"] += 1
        run.counts["exchange_returned"] += len(back)
    run._refresh()
    return 1


def _all_hold(run, ids: np.ndarray) -> bool:
    s = run.state
    support = s.supports(run.padded, run.lengths, ids)
    n_open = (~s.suppressed[run.padded[ids]]).sum(axis=1)
    return bool((run.vacuous[ids] | (n_open == 0) | (support >= run.k)).all())
