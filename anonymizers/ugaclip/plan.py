"""A global suppression plan for UGACLIP's line 17 (Loukides et al., PNAS 2010, SI Algorithm 2):
a feasible suppressed set from the bound's MILP, guiding which of p's items is dropped first.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-plan."""

from __future__ import annotations

from collections import deque

import numpy as np

from anonymizers.errors import ParameterError
from anonymizers.ugaclip.bound import (
    Problem,
    _CodeBits,
    _drop_columns,
    _group_members,
    _GroupBits,
    build_problem,
    relaxed_min_suppression,
)

ROUND_SECONDS = 20.0  # per covering MILP round, as the benchmark's bound (ugaclip.md)
ROUNDS = 200  # rounds of the cutting-plane loop at most, as the bound's default


def suppression_plan(records, constraints, utility_groups, k: int, seconds: float = 0.0,
                     weigh_occurrences: bool = False, nodes: int = 0,
                     rounds: int = ROUNDS) -> dict:
    """The plan (code indices of ``records``) from the bound's cutting-plane
    loop, repaired to feasibility; also the bound it proved (``bound``, a
    valid lower bound on any release's suppressed codes, or with
    ``weigh_occurrences`` on its suppressed occurrences, the measure the
    MILP then minimises: Fig. S1A's rather than S1B's), the sizes before and
    after repair, the weights' name (``weights``) and the budget.

    The loop's work (docs/methods/ugaclip.md#ugaclip-plan): at most
    ``rounds`` rounds; with ``nodes`` > 0 each round's MILP stops after
    ``nodes`` branch-and-bound nodes, and ``seconds`` (if > 0) only caps the
    whole loop's wall-clock time; with ``nodes`` = 0 the loop stops after
    ``seconds`` and each round after ``ROUND_SECONDS`` (the wall-clock
    budget).  ``deterministic`` says whether no wall-clock limit stopped the
    loop or a round: then the plan is a function of the input and the
    settings alone."""
    if not (seconds > 0 or nodes > 0):
        raise ParameterError("plan_seconds", "a plan needs a budget: plan_seconds > 0 "
                             "or plan_nodes > 0")
    if nodes < 0 or rounds < 1:
        raise ParameterError("plan_nodes" if nodes < 0 else "plan_rounds",
                             f"must be plan_nodes >= 0 and plan_rounds >= 1, got {nodes} "
                             f"and {rounds}")
    problem = build_problem(records, constraints, utility_groups, k,
                            weigh_occurrences=weigh_occurrences)
    limits = ({"round_limit": None, "node_limit": nodes} if nodes > 0
              else {"round_limit": min(ROUND_SECONDS, seconds), "node_limit": None})
    run = relaxed_min_suppression(problem, time_limit=seconds if seconds > 0 else None,
                                  max_rounds=rounds, shrink=True, **limits)
    chosen = np.zeros(problem.matrix.shape[1], dtype=bool)
    chosen[run["incumbent"]] = True
    before = int(chosen.sum())
    plan = repair(problem, chosen)
    return {"codes": np.flatnonzero(plan).tolist(), "bound": run["bound"],
            "incumbent": before, "repaired": int(plan.sum()), "rounds": run["rounds"],
            "bound_optimal": run["optimal"],
            "weights": "occurrences" if weigh_occurrences else "codes",
            "cost": float(problem.cost()[plan].sum()),
            "budget": {"seconds": float(seconds), "nodes": int(nodes), "rounds": int(rounds)},
            "deterministic": not run["timed_out"]}  # no timings: a release is its input's


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
