"""A global suppression plan for UGACLIP's line 17 (Loukides et al., PNAS 2010, SI Algorithm 2):
a feasible suppressed set from the bound's MILP, guiding which of p's items is dropped first.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-plan."""

from __future__ import annotations

from collections import deque

import numpy as np

from anonymizers.ugaclip.bound import (Problem, _CodeBits, _drop_columns, _group_members,
                                       _GroupBits, build_problem, relaxed_min_suppression)

ROUND_SECONDS = 20.0  # per covering MILP round, as the benchmark's bound (ugaclip.md)


def suppression_plan(records, constraints, utility_groups, k: int, seconds: float,
                     weigh_occurrences: bool = False) -> dict:
    """The plan (code indices of ``records``) from ``seconds`` of the bound's
    cutting-plane loop, repaired to feasibility; also the bound it proved
    (``bound``, a valid lower bound on any release's suppressed codes, or
    with ``weigh_occurrences`` on its suppressed occurrences, the measure the
    MILP then minimises: Fig. S1A's rather than S1B's), the sizes before and
    after repair, and the weights' name (``weights``)."""
    problem = build_problem(records, constraints, utility_groups, k,
                            weigh_occurrences=weigh_occurrences)
    run = relaxed_min_suppression(problem, time_limit=seconds, shrink=True,
                                  round_limit=min(ROUND_SECONDS, seconds))
    chosen = np.zeros(problem.matrix.shape[1], dtype=bool)
    chosen[run["incumbent"]] = True
    before = int(chosen.sum())
    plan = repair(problem, chosen)
    return {"codes": np.flatnonzero(plan).tolist(), "bound": run["bound"],
            "incumbent": before, "repaired": int(plan.sum()), "rounds": run["rounds"],
            "bound_optimal": run["optimal"],
            "weights": "occurrences" if weigh_occurrences else "codes",
            "cost": float(problem.cost()[plan].sum())}


def repair(problem: Problem, chosen: np.ndarray) -> np.ndarray:
    """Grow ``chosen`` until it is feasible (``bound.feasible``).  Constraints
    are checked in turn against the shrunk model (holders of g \\ S); a
    constraint p left unprotected loses p's codes in one group T_p still
    touches: the group whose such codes cost least (``Problem.cost``: as many
    codes, or occurrences; ties: the one whose loss leaves most records
    holding the rest of T_p, then the lower id).  That group's
    holders shrink, so the constraints touching it are checked again; each
    step suppresses a code, and suppressing every constrained code is
    feasible, so this ends.  Then codes whose return keeps S feasible are
    given back (``_trim``)."""
    s = chosen.copy()
    cost = problem.cost()
    group, k = problem.group, problem.k
    codes = _CodeBits(problem.matrix)
    members = _group_members(group)
    gb = _GroupBits(_drop_columns(problem.matrix, s), group)
    cons = [np.asarray(p) for p in problem.constraints]
    touching: dict[int, list] = {}
    for pid, p in enumerate(cons):
        for g in set(group[p].tolist()):
            touching.setdefault(g, []).append(pid)
    queue, queued = deque(range(len(cons))), np.ones(len(cons), dtype=bool)
    while queue:
        pid = queue.popleft()
        queued[pid] = False
        p = cons[pid]
        if _held(p, s, group, gb, k):
            continue
        left = p[~s[p]]
        kept = sorted(set(group[left].tolist()))
        g = _cheapest(left, kept, group, gb, cost)
        s[left[group[left] == g]] = True
        gb.bits[g] = codes.union(members[g][~s[members[g]]])
        for other in touching[g] + [pid]:
            if not queued[other]:
                queued[other] = True
                queue.append(other)
    _trim(s, cons, group, gb, codes, k, cost)
    return s


def _trim(s, cons, group, gb: _GroupBits, codes: _CodeBits, k: int, cost) -> None:
    """Give back codes of S whose return keeps S feasible, those in fewest
    constraints first (ties: the costlier code, then the lower index), pass
    after pass: a return only enlarges its group's holders, so only the
    constraints holding the code can fail."""
    holding: dict[int, list] = {}
    for pid, p in enumerate(cons):
        for c in p.tolist():
            holding.setdefault(c, []).append(pid)
    changed = True
    while changed:
        changed = False
        order = sorted(np.flatnonzero(s).tolist(),
                       key=lambda c: (len(holding.get(c, ())), -cost[c], c))
        for c in order:
            g = int(group[c])
            before = gb.bits[g].copy()
            s[c] = False
            gb.bits[g] |= codes.bits[c]
            if all(_held(cons[pid], s, group, gb, k) for pid in holding.get(c, ())):
                changed = True
                continue
            s[c] = True
            gb.bits[g] = before


def _held(p: np.ndarray, s, group, gb: _GroupBits, k: int) -> bool:
    kept = sorted(set(group[p[~s[p]]].tolist()))
    return not kept or gb.support(kept) >= k


def _cheapest(left: np.ndarray, kept: list, group: np.ndarray, gb: _GroupBits, cost) -> int:
    def key(g):
        rest = [h for h in kept if h != g]
        return (float(cost[left[group[left] == g]].sum()),
                -(gb.support(rest) if rest else 1 << 30), g)
    return min(kept, key=key)
