"""Group restores after UGACLIP's restore pass (not a line of Algorithm 2; Loukides et al., PNAS
2010, SI): give back a utility constraint's suppressed codes together, re-checked at k.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-regroup."""

from __future__ import annotations

import numpy as np


def group_restore_pass(run) -> int:
    """For each utility constraint with two or more suppressed codes, try to
    give them back together (``try_group``); return the number of codes
    given back.  ``run`` is an ``algorithm.Run`` after its restore pass."""
    s = run.state
    returned = 0
    for members in run.util_members:
        gone = members[s.suppressed[members]]
        if len(gone) >= 2:
            returned += try_group(run, gone)
    return returned


def try_group(run, gone: np.ndarray) -> int:
    """Put every code of ``gone`` (suppressed codes of one utility constraint)
    into one item: each open item of the constraint in turn, then an item of
    their own.  While some constraint holding a returned code is held by
    fewer than k records, the returned code lying in most such constraints
    (ties: the rarer code, then vocabulary order) is suppressed again.  The
    first target that keeps two or more codes back is committed; one code
    alone is the restore pass's move, already tried."""
    s = run.state
    ids = run.constraints_of(gone)
    for into in run.restore_targets(int(gone[0])) + [None]:
        back = _place(s, gone, into)
        back = _shed(run, back, ids)
        if len(back) >= 2:
            run.trace.append(("group-restore", back, into))
            run._changed(s.item_of(back[0]), merged=True)
            run.support[ids] = s.supports(run.padded, run.lengths, ids)
            run.counts["group_restored"] += len(back)
            return len(back)
        for c in back:
            s.suppress(c)
    return 0


def _place(s, gone: np.ndarray, into) -> list[int]:
    """Restore all of ``gone`` into the item of ``into`` (or a new item)."""
    first = int(gone[0])
    s.restore(first, into)
    for c in gone[1:]:
        s.restore(int(c), first)
    return [int(c) for c in gone]


def _shed(run, back: list[int], ids: np.ndarray) -> list[int]:
    """Suppress returned codes again, one at a time, until every constraint of
    ``ids`` holds (k records, or no open code) or nothing is left.  Only the
    constraints holding a code still returned can fail: the others see their
    former items, grown or as they were."""
    s = run.state
    while back:
        ids = run.constraints_of(back)
        support = s.supports(run.padded, run.lengths, ids)
        n_open = (~s.suppressed[run.padded[ids]]).sum(axis=1)
        failing = ids[~(run.vacuous[ids] | (n_open == 0) | (support >= run.k))]
        if failing.size == 0:
            return back
        arr = np.asarray(back)
        hits = np.bincount(run.padded[failing].ravel(), minlength=s.n_codes + 1)[arr]
        drop = int(arr[np.lexsort((arr, s.code_support[arr], -hits))[0]])
        s.suppress(drop)
        back.remove(drop)
    return back
