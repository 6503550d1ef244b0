"""Lower bounds on the codes any UGACLIP-style release must suppress (SI Definition 1, Loukides
et al., PNAS 2010): relaxation (R) with lazy covering cuts; an exact MILP for small samples.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-bound."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from anonymizers.errors import ParameterError
from anonymizers.ugaclip.state import popcount


@dataclass(frozen=True)
class Problem:
    """Encoded instance: ``matrix`` records x codes (0/1 CSR), ``group`` the
    group id of each code, ``constraints`` lists of code indices (present in
    the data, non-vacuous), threshold ``k``; ``weights`` the cost of
    suppressing each code (None: 1 each, the distinct-codes measure of Fig.
    S1B; the codes' occurrences give Fig. S1A's measure).  Weights must be
    non-negative integers so that a dual bound can be rounded up."""

    matrix: sp.csr_matrix
    group: np.ndarray
    constraints: list
    k: int
    weights: np.ndarray | None = None

    def cost(self) -> np.ndarray:
        n_codes = self.matrix.shape[1]
        return np.ones(n_codes) if self.weights is None else \
            np.asarray(self.weights, dtype=float)


def build_problem(records, constraints, utility_groups, k: int,
                  weigh_occurrences: bool = False) -> Problem:
    """From ``Records``, constraints (code strings) and utility constraints
    (code strings; codes in none form one extra group).  Constraints holding a
    code absent from the data, or held by no record, are vacuous and dropped.
    ``weigh_occurrences`` bounds suppressed occurrences (Fig. S1A) instead of
    distinct codes (Fig. S1B)."""
    index = {c: i for i, c in enumerate(records.codes)}
    group = np.full(records.n_codes, -1, dtype=np.int64)
    for g, u in enumerate(utility_groups):
        group[[index[c] for c in u if c in index]] = g
    group[group < 0] = len(utility_groups)
    csc = records.matrix.tocsc()
    kept = []
    for p in constraints:
        if not p or any(c not in index for c in p):
            continue
        q = sorted({index[c] for c in p})
        rows = _holders_of_all(csc, q)
        if rows > 0:
            kept.append(q)
    weights = None
    if weigh_occurrences:
        weights = np.asarray(records.matrix.sum(axis=0)).ravel().astype(np.int64)
    return Problem(records.matrix, group, kept, int(k), weights)


def _holders_of_all(csc, cols) -> int:
    rows = None
    for c in cols:
        col = csc.indices[csc.indptr[c]:csc.indptr[c + 1]]
        rows = col if rows is None else np.intersect1d(rows, col, assume_unique=True)
    return 0 if rows is None else len(rows)


class _GroupBits:
    """holders(g) of every group as bitsets over records."""

    def __init__(self, matrix: sp.csr_matrix, group: np.ndarray):
        n, _ = matrix.shape
        words = max(1, -(-n // 64))
        n_groups = int(group.max(initial=-1)) + 1
        self.bits = np.zeros((n_groups, words), dtype=np.uint64)
        coo = matrix.tocoo()
        rows = coo.row.astype(np.int64)
        np.bitwise_or.at(self.bits, (group[coo.col], rows // 64),
                         np.left_shift(np.uint64(1), (rows % 64).astype(np.uint64)))

    def support(self, groups) -> int:
        return int(popcount(np.bitwise_and.reduce(self.bits[list(groups)], axis=0)))

    def minimal_infrequent(self, groups: list, k: int) -> list:
        """A minimal subset of ``groups`` (infrequent: support < k) that is still
        infrequent; the most frequent groups are tried for removal first so
        the cut keeps the rare ones."""
        order = sorted(groups, key=lambda g: -int(popcount(self.bits[g])))
        keep = list(order)
        for g in order:
            trial = [x for x in keep if x != g]
            if trial and self.support(trial) < k:
                keep = trial
        return sorted(keep)


def relaxed_min_suppression(problem: Problem, time_limit: float | None = 300.0,
                            max_rounds: int = 200, shrink: bool = False,
                            round_limit: float | None = None,
                            node_limit: int | None = None) -> dict:
    """Lower bound on |S| from relaxation (R) (docs/methods/ugaclip.md#ugaclip-bound), or, with
    ``shrink``, from (R) strengthened by shrink cuts (``_shrink_cuts``), added
    once no (R) cut is violated.

    Each round solves the covering MILP over the cuts so far (at most
    ``round_limit`` seconds and ``node_limit`` branch-and-bound nodes; None:
    no such limit); a round stopped by a limit gives HiGHS's dual
    bound and its incumbent is separated next, so every round's figure is a
    bound and ``bound`` is the largest.  No round starts once ``time_limit``
    seconds have passed (None: the loop ends only on ``max_rounds`` or when
    no cut is violated).  Returns ``{"bound", "optimal",
    "rounds", "cuts", "seconds", "shrink_cuts", "history", "relaxed",
    "suppressed", "incumbent", "timed_out"}`` (``timed_out``: a wall-clock
    limit stopped a round or the loop, so the result depends on the host's
    speed; without it the result is a function of the problem and the
    limits of rounds and nodes; ``history``: per round, seconds, cuts so far, the round's
    bound and whether its MILP was solved to optimality; ``relaxed``: with
    ``shrink``, (R)'s figure when its cuts ran out, None if they never did): ``bound`` is a valid lower
    bound on the suppressed codes of every release respecting the utility
    policy and satisfying the privacy policy; ``optimal`` says whether it is
    the exact optimum of the model solved (with ``shrink``: of the exact
    problem itself, since a set S that violates no cut of either kind is
    feasible); ``suppressed`` is the optimal S when ``optimal``;
    ``incumbent`` the last round's solution (a set of codes meeting the cuts
    so far, not necessarily feasible: ``plan`` repairs it)."""
    t0 = time.perf_counter()
    k, group = problem.k, problem.group
    gb = _GroupBits(problem.matrix, group)
    parts = [_parts(p, group) for p in problem.constraints]
    cuts: list[tuple[int, tuple, tuple]] = []
    seen = set()
    chosen = np.zeros(problem.matrix.shape[1], dtype=bool)
    best, optimal, solved, rounds, history = 0, False, True, 0, []
    relaxed = None  # (R)'s figure, once its cuts are exhausted
    timed_out = False
    while rounds < max_rounds:
        new = _violated_cuts(parts, chosen, gb, k, seen)
        if not new and shrink:
            relaxed = relaxed or {"bound": int(best), "optimal": solved, "rounds": rounds}
            new = _shrink_cuts(problem, parts, chosen, seen)
        if not new:
            optimal = solved
            break
        cuts += new
        rounds += 1
        limit = _round_seconds(time_limit, round_limit, time.perf_counter() - t0)
        if limit is not None and limit <= 0:
            timed_out = True
            break
        value, x, solved, stopped = _solve_cover(parts, cuts, problem.cost(), limit, node_limit)
        timed_out = timed_out or stopped
        best = max(best, value)
        history.append((round(time.perf_counter() - t0, 1), len(cuts), int(value), solved))
        if x is None:
            break
        chosen = x
    return {"bound": int(best), "optimal": optimal, "rounds": rounds, "cuts": len(cuts),
            "seconds": round(time.perf_counter() - t0, 3), "shrink_cuts": shrink,
            "history": history, "relaxed": relaxed,
            "suppressed": np.flatnonzero(chosen).tolist() if optimal else None,
            "incumbent": np.flatnonzero(chosen).tolist(), "timed_out": timed_out}


def _round_seconds(time_limit, round_limit, elapsed: float) -> float | None:
    """Seconds the next round may take: what is left of ``time_limit``, at
    most ``round_limit``; None when neither is set."""
    left = None if time_limit is None else time_limit - elapsed
    if round_limit is None:
        return left
    return round_limit if left is None else min(left, round_limit)


def _parts(p: list, group: np.ndarray) -> dict:
    """p's codes by group: {group id: tuple of code indices}."""
    out: dict[int, list] = {}
    for c in p:
        out.setdefault(int(group[c]), []).append(c)
    return {g: tuple(v) for g, v in out.items()}


def _violated_cuts(parts, chosen, gb, k, seen) -> list:
    new = []
    for pid, part in enumerate(parts):
        kept = [g for g, codes in part.items() if not chosen[list(codes)].all()]
        if not kept or gb.support(kept) >= k:
            continue
        cut = (pid, tuple(gb.minimal_infrequent(kept, k)), ())
        if cut not in seen:
            seen.add(cut)
            new.append(cut)
    return new


def _shrink_cuts(problem: Problem, parts, chosen: np.ndarray, seen: set) -> list:
    """Cuts for the constraints that (R)'s solution S leaves unprotected once
    S is removed from every record (the shrinking (R) ignores).

    For such a p, let M ⊆ T_p(S) be groups p keeps whose holders after
    removing a code set C ⊆ S number < k.  Any S' ⊇ C that keeps every
    g ∈ M for p has T_p(S') ⊇ M and holders only shrink as S' grows, so p
    fails: every feasible S' keeps some code of C or drops some g ∈ M,

        sum_{g in M} y[p, g] + sum_{c in C} (1 - x[c]) >= 1,

    (R)'s cut when C is empty.  M is shrunk first, then C (codes whose return
    keeps M below k are left out), so the cut is as strong as greedy finds.
    A set S that violates no cut of either kind is feasible."""
    k, group = problem.k, problem.group
    bits = _CodeBits(problem.matrix)
    shrunk = _GroupBits(_drop_columns(problem.matrix, chosen), group)
    members = _group_members(group)
    new = []
    for pid, part in enumerate(parts):
        kept = [g for g, codes in part.items() if not chosen[list(codes)].all()]
        if not kept or shrunk.support(kept) >= k:
            continue
        m = shrunk.minimal_infrequent(kept, k)
        c = _minimal_codes(bits, [members[g] for g in m], chosen, k)
        cut = (pid, tuple(m), c)
        if cut not in seen:
            seen.add(cut)
            new.append(cut)
    return new


class _CodeBits:
    """holders(c) of every code as bitsets over records."""

    def __init__(self, matrix: sp.csr_matrix):
        n, n_codes = matrix.shape
        self.bits = np.zeros((n_codes, max(1, -(-n // 64))), dtype=np.uint64)
        coo = matrix.tocoo()
        rows = coo.row.astype(np.int64)
        np.bitwise_or.at(self.bits, (coo.col, rows // 64),
                         np.left_shift(np.uint64(1), (rows % 64).astype(np.uint64)))

    def union(self, codes: np.ndarray) -> np.ndarray:
        return np.bitwise_or.reduce(self.bits[codes], axis=0) if len(codes) else \
            np.zeros(self.bits.shape[1], dtype=np.uint64)


def _group_members(group: np.ndarray) -> list:
    order = np.argsort(group, kind="stable")
    cuts = np.searchsorted(group[order], np.arange(int(group.max(initial=-1)) + 2))
    return [order[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def _minimal_codes(bits: _CodeBits, groups: list, chosen: np.ndarray, k: int) -> tuple:
    """A small C ⊆ S (``chosen``) within ``groups`` whose removal keeps the
    groups' common holders below k: S's codes are given back one at a time,
    those touching fewest records first, while the holders stay below k."""
    held = [bits.union(g[~chosen[g]]) for g in groups]
    everyone = np.bitwise_and.reduce(np.array([bits.union(g) for g in groups]), axis=0)
    cand = [(j, int(c)) for j, g in enumerate(groups) for c in g[chosen[g]]
            if popcount(bits.bits[c] & everyone)]
    cand.sort(key=lambda jc: (int(popcount(bits.bits[jc[1]] & everyone)), jc[1]))
    keep = []
    for j, c in cand:
        trial = held[j] | bits.bits[c]
        others = [h for i, h in enumerate(held) if i != j]
        common = np.bitwise_and.reduce(np.array(others + [trial]), axis=0)
        if popcount(common) < k:
            held[j] = trial
        else:
            keep.append(c)
    return tuple(sorted(keep))


def _solve_cover(parts, cuts, weights, time_limit, node_limit=None):
    """min sum w x s.t. every cut (p, M, C) has some g in M with p ∩ g ⊆ S or
    some code of C kept: sum_M y[p, g] - sum_C x[c] >= 1 - |C|.
    y[p, g] (continuous) <= x[c] for c in p ∩ g stands for "p ∩ g suppressed"
    where p ∩ g has several codes; a single code uses x[c] itself.  HiGHS
    stops after ``time_limit`` seconds (at least 1; None: never) or
    ``node_limit`` branch-and-bound nodes (None: none); returns the dual
    bound, the incumbent (None if none was found), whether the MILP was
    solved, and whether the time limit stopped it."""
    n_codes = len(weights)
    yvar: dict[tuple, int] = {}
    rows, cols, vals, lo = [], [], [], []
    n_rows = 0
    n_vars = n_codes

    def var(pid, g):
        nonlocal n_vars, n_rows
        codes = parts[pid][g]
        if len(codes) == 1:
            return codes[0]
        if (pid, g) not in yvar:
            yvar[(pid, g)] = v = n_vars
            n_vars += 1
            for c in codes:  # y - x_c <= 0
                rows.extend([n_rows, n_rows])
                cols.extend([v, c])
                vals.extend([1.0, -1.0])
                lo.append((-np.inf, 0.0))
                n_rows += 1
        return yvar[(pid, g)]

    for pid, groups, codes in cuts:
        coef = {var(pid, g): 1.0 for g in groups}
        for c in codes:  # a c in some p ∩ g of M: y - x_c is y's best, <= 0
            coef[c] = coef.get(c, 0.0) - 1.0
        rows.extend([n_rows] * len(coef))
        cols.extend(coef)
        vals.extend(coef.values())
        lo.append((1.0 - len(codes), np.inf))
        n_rows += 1
    a = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_vars))
    lb, ub = np.array(lo).T
    cost = np.r_[weights, np.zeros(n_vars - n_codes)]
    integrality = np.r_[np.ones(n_codes), np.zeros(n_vars - n_codes)]
    options = {} if time_limit is None else {"time_limit": max(time_limit, 1.0)}
    if node_limit is not None:
        options["node_limit"] = int(node_limit)
    res = milp(cost, constraints=LinearConstraint(a, lb, ub), integrality=integrality,
               bounds=Bounds(0, 1), options=options)
    solved = res.status == 0
    # the dual bound, not the incumbent, even when "solved": HiGHS stops at a
    # relative gap of 1e-4, so the incumbent may exceed the optimum
    dual = getattr(res, "mip_dual_bound", None)
    value = int(np.ceil((dual or 0) - 1e-6))
    x = None if res.x is None else np.round(res.x[:n_codes]).astype(bool)
    return value, x, solved, res.status == 1  # 1: time limit (a node limit is 4)


def feasible(problem: Problem, suppressed) -> bool:
    """Whether suppressing exactly ``suppressed`` (code indices) admits a
    release satisfying the privacy policy (all groups maximally generalized)."""
    s = np.zeros(problem.matrix.shape[1], dtype=bool)
    s[list(suppressed)] = True
    gb = _GroupBits(_drop_columns(problem.matrix, s), problem.group)
    for p in problem.constraints:
        kept = sorted({int(problem.group[c]) for c in p if not s[c]})
        if kept and gb.support(kept) < problem.k:
            return False
    return True


def _drop_columns(matrix: sp.csr_matrix, drop: np.ndarray) -> sp.csr_matrix:
    keep = sp.diags((~drop).astype(np.int8), dtype=np.int8)
    out = (matrix @ keep).tocsr()
    out.eliminate_zeros()
    return out


def brute_force_min_suppression(problem: Problem, max_codes: int = 16) -> int:
    """Exact minimum |S| by enumeration (tests and tiny cases only)."""
    codes = sorted({c for p in problem.constraints for c in p})
    if len(codes) > max_codes:
        raise ParameterError("max_codes", f"{len(codes)} codes are too many to enumerate")
    for size in range(len(codes) + 1):
        for s in itertools.combinations(codes, size):
            if feasible(problem, s):
                return size
    raise AssertionError("suppressing every constrained code is always feasible")


def exact_min_suppression(problem: Problem, time_limit: float = 300.0) -> dict:
    """Exact minimum |S| (docs/methods/ugaclip.md#ugaclip-bound) as a MILP over records.

    Variables: x_c (code suppressed, binary); a_pg (p keeps group g, >= 1 - x_c
    for c in p ∩ g); z_rg (record r holds g \\ S, <= sum over r ∩ g of 1 - x_c);
    w_rp (r matches p, <= z_rg + 1 - a_pg for every g of p); sum_r w_rp >= k.
    A fully suppressed p has every a_pg = 0 and all N >= k records match it
    (N < k is refused).  Size grows with records x constraints: small samples."""
    m, k = problem.matrix, problem.k
    n, n_codes = m.shape
    if n < k:
        raise ParameterError("k", f"{n} records cannot hold anything {k} times")
    t0 = time.perf_counter()
    group = problem.group
    groups_of = [sorted({int(group[c]) for c in p}) for p in problem.constraints]
    used = sorted({g for gs in groups_of for g in gs})
    r_idx, c_idx = m.nonzero()
    nv = n_codes
    z = {}
    for r, c in zip(r_idx.tolist(), c_idx.tolist()):
        key = (r, int(group[c]))
        if key[1] in used and key not in z:
            z[key] = nv
            nv += 1
    a = {}
    for pid, gs in enumerate(groups_of):
        for g in gs:
            a[(pid, g)] = nv
            nv += 1
    w0 = nv
    nv += n * len(groups_of)
    rows, cols, vals, lb, ub = [], [], [], [], []

    def row(entries, lo, hi):
        for v, coef in entries:
            rows.append(len(lb))
            cols.append(v)
            vals.append(coef)
        lb.append(lo)
        ub.append(hi)

    by_key: dict[tuple, list] = {}
    for r, c in zip(r_idx.tolist(), c_idx.tolist()):
        by_key.setdefault((r, int(group[c])), []).append(c)
    for key, v in z.items():  # z + sum x_c <= |r ∩ g|
        members = by_key[key]
        row([(v, 1.0)] + [(c, 1.0) for c in members], -np.inf, float(len(members)))
    for pid, p in enumerate(problem.constraints):
        for c in p:  # a_pg + x_c >= 1
            row([(a[(pid, int(group[c]))], 1.0), (c, 1.0)], 1.0, np.inf)
        for r in range(n):
            w = w0 + pid * n + r
            for g in groups_of[pid]:  # w - z + a <= 1
                entries = [(w, 1.0), (a[(pid, g)], 1.0)]
                if (r, g) in z:
                    entries.append((z[(r, g)], -1.0))
                row(entries, -np.inf, 1.0)
        row([(w0 + pid * n + r, 1.0) for r in range(n)], float(k), np.inf)
    a_mat = sp.csr_matrix((vals, (rows, cols)), shape=(len(lb), nv))
    cost = np.r_[np.ones(n_codes), np.zeros(nv - n_codes)]
    integrality = np.r_[np.ones(n_codes), np.zeros(nv - n_codes)]
    res = milp(cost, constraints=LinearConstraint(a_mat, lb, ub), integrality=integrality,
               bounds=Bounds(0, 1), options={"time_limit": time_limit})
    optimal = res.status == 0
    bound = int(round(res.fun)) if optimal else int(np.ceil((res.mip_dual_bound or 0) - 1e-6))
    return {"bound": bound, "optimal": optimal, "seconds": round(time.perf_counter() - t0, 3)}



def holder_pair_bound(problem: Problem, rounds: int = 1, step: float = 0.5,
                      max_rows: int = 4000, time_limit: float | None = None) -> dict:
    """Lower bound on the cost of S from splitting each code among its
    constraints (a Lagrangian decomposition of (R); docs/methods/ugaclip.md#ugaclip-bound).

    Give each constrained code c shares λ[c, p] >= 0 over the constraints
    p ∋ c summing to its cost w_c.  For a feasible S every kept c has
    g(c) ∈ T_p(S) for each p ∋ c, and T_p(S) is held by >= k records (before
    S is removed, since removal only shrinks holders), so

        cost(kept) <= sum_p val_p,   val_p >= max { λ_p(T) : T ⊆ G(p), m(T) >= k }

    and cost(S) >= cost(constrained codes) - sum_p val_p.  ``_pair_value``
    gives val_p from pairs of holders.  Round 1 splits evenly; each later
    round moves shares of c away from the constraints whose best T keeps
    g(c) (multiplicative weights, factor exp(-step)), and every round's
    figure is a bound, so ``bound`` is the largest.  No round starts once
    ``time_limit`` seconds have passed (the first always runs).  Returns ``{"bound",
    "rounds", "seconds", "history"}`` (history: per round, seconds, bound)."""
    t0 = time.perf_counter()
    cost, group, k = problem.cost(), problem.group, problem.k
    groups = _record_groups(problem.matrix, group)
    codes = np.unique(np.concatenate([np.asarray(p) for p in problem.constraints])) \
        if problem.constraints else np.zeros(0, dtype=np.int64)
    share = [np.ones(len(p)) for p in problem.constraints]
    best, history = 0, []
    for _ in range(max(rounds, 1)):
        if history and time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        _normalise(problem.constraints, share, cost)
        total, kept = 0.0, []
        for p, lam in zip(problem.constraints, share):
            value, keep = _pair_value(groups, group[np.asarray(p)], lam, k, max_rows)
            total += value
            kept.append(keep)
        figure = max(0, int(np.ceil(cost[codes].sum() - total - 1e-6)))
        best = max(best, figure)
        history.append((round(time.perf_counter() - t0, 1), figure))
        share = [lam * np.exp(-step * keep) for lam, keep in zip(share, kept)]
    return {"bound": best, "rounds": len(history),
            "seconds": round(time.perf_counter() - t0, 3), "history": history}


def _record_groups(matrix: sp.csr_matrix, group: np.ndarray) -> sp.csc_matrix:
    """records x groups, 1 where the record holds a code of the group."""
    n_codes = len(group)
    to_group = sp.csr_matrix((np.ones(n_codes), (np.arange(n_codes), group)),
                             shape=(n_codes, int(group.max(initial=-1)) + 1))
    out = (matrix.astype(np.float64) @ to_group).tocsc()
    out.data[:] = 1.0
    return out


def _normalise(constraints, share, cost) -> None:
    """Scale each code's shares over its constraints to sum to its cost."""
    n = len(cost)
    total = np.zeros(n)
    for p, lam in zip(constraints, share):
        np.add.at(total, p, lam)
    for p, lam in zip(constraints, share):
        lam *= cost[p] / total[p]


def _pair_value(groups: sp.csc_matrix, code_groups: np.ndarray, lam: np.ndarray,
                k: int, max_rows: int) -> tuple:
    """An upper bound on max λ(T) over T ⊆ G(p) held by >= k records, and, per
    code of p, whether its group is in the T that attains the bound.

    If H (|H| >= k) holds T then for every a ∈ H and b ∈ H \\ {a},
    λ(T) <= V[a, b] = λ(G(p) ∩ G(a) ∩ G(b)).  So λ(T) <= f[a], the (k-1)-th
    largest V[a, b] over b ≠ a, for k records a, i.e. λ(T) is at most the
    k-th largest f[a].  Records with the same groups within G(p) are merged
    (with counts); past ``max_rows`` distinct ones only a ∈ H is used
    (λ(T) <= the k-th largest V[a, a])."""
    gs, inv = np.unique(code_groups, return_inverse=True)
    weight = np.bincount(inv, weights=lam, minlength=len(gs))
    rows, count = _distinct_rows(groups[:, gs])
    if count.sum() < k:  # only T = ∅ is held k times
        return 0.0, np.zeros(len(code_groups))
    if k < 2:
        return float(weight.sum()), np.ones(len(code_groups))
    if len(rows) > max_rows:
        single = rows @ weight
        a = _kth_largest(single, count, k)
        return float(single[a]), rows[a][inv]
    v = (rows * weight) @ rows.T
    others = np.broadcast_to(count, v.shape) - np.eye(len(rows))  # b = a: its copies
    order = np.argsort(-v, axis=1)
    cum = np.cumsum(np.take_along_axis(others, order, axis=1), axis=1)
    pick = np.argmax(cum >= k - 1, axis=1)  # the (k-1)-th largest b of each a
    possible = cum[:, -1] >= k - 1
    b = order[np.arange(len(rows)), pick]
    f = np.where(possible, v[np.arange(len(rows)), b], -np.inf)
    a = _kth_largest(f, count, k)
    keep = rows[a] * rows[b[a]]
    return max(float(f[a]), 0.0), keep[inv]


def _distinct_rows(block: sp.csc_matrix) -> tuple:
    """Distinct rows of a 0/1 records x groups block (float) and their counts."""
    n, m = block.shape
    if m > 52:  # too wide for an exact float key
        dense = block.toarray() > 0
        _, first, count = np.unique(np.packbits(dense, axis=1), axis=0,
                                    return_index=True, return_counts=True)
        return dense[first].astype(np.float64), count
    coo = block.tocoo()
    key = np.bincount(coo.row, weights=np.exp2(coo.col), minlength=n).astype(np.int64)
    keys, count = np.unique(key, return_counts=True)
    rows = (keys[:, None] >> np.arange(m)) & 1
    return rows.astype(np.float64), count


def _kth_largest(values: np.ndarray, count: np.ndarray, k: int) -> int:
    """Index of the k-th largest value, each value repeated count times."""
    order = np.argsort(-values, kind="stable")
    return int(order[np.argmax(np.cumsum(count[order]) >= k)])


def hull_lagrangian_bound(problem: Problem, iterations: int = 3000, step: float = 2.0,
                          time_limit: float | None = None, max_sets: int = 20000) -> dict:
    """Lower bound on the cost of S from the Lagrangian dual of (R) with each
    constraint's exact frequent-set hull (docs/methods/ugaclip.md#ugaclip-bound).

    For p with G(p) infrequent, F_p are the maximal T ⊆ G(p) held by >= k
    records (before S is removed).  A feasible S has T_p(S) ⊆ some T ∈ F_p
    (or empty), so x = 1_S and λ_p = e_T solve

        min w.x  s.t.  x_c + Σ_{T ∈ F_p, g(c) ∈ T} λ_{p,T} >= 1  (p, c ∈ p),
                       Σ_T λ_{p,T} <= 1,  x ∈ [0, 1], λ >= 0,

    and for any multipliers u >= 0 on the first rows

        L(u) = Σ u + Σ_c min(0, w_c - Σ_{p ∋ c} u[p, c]) - Σ_p max(0, max_{T ∈ F_p} u_p(T))

    is at most that minimum (u_p(T): u of p's codes in groups of T).  u starts
    as the holder-pair bound's even split and follows projected subgradient
    steps (length ``step``, shrinking as 1/sqrt(1 + i/50)); the largest L
    seen, rounded up, is the bound.  A constraint whose frequent sets exceed
    ``max_sets`` is left out (a relaxation, still valid).  Returns ``{"bound",
    "iterations", "seconds", "setup_seconds", "dropped", "sets", "history"}``
    (``dropped``: constraints left out; ``sets``: rows of F_p kept, with one
    empty set per constraint; ``history``: every 100th step's seconds and
    bound so far)."""
    t0 = time.perf_counter()
    cost = problem.cost()
    lag = _HullLagrangian(problem, max_sets)
    u = cost[lag.code] / np.maximum(np.bincount(lag.code, minlength=len(cost)), 1)[lag.code]
    best, history, done = -np.inf, [], 0
    for i in range(iterations):
        if time_limit is not None and i and time.perf_counter() - t0 > time_limit:
            break
        value, grad = lag.value_and_subgradient(u, cost)
        best, done = max(best, value), i + 1
        if i % 100 == 0:
            history.append((round(time.perf_counter() - t0, 1), int(np.ceil(best - 1e-6))))
        norm = np.sqrt((grad ** 2).sum())
        if norm == 0:
            break
        u = np.maximum(0.0, u + step * grad / norm / np.sqrt(1.0 + i / 50.0))
    bound = max(0, int(np.ceil(best - 1e-6))) if done else 0
    return {"bound": bound, "iterations": done, "seconds": round(time.perf_counter() - t0, 3),
            "dropped": lag.dropped, "sets": lag.n_sets, "history": history,
            "setup_seconds": lag.setup_seconds}


class _HullLagrangian:
    """The pieces of ``hull_lagrangian_bound``: one entry per (p, c ∈ p) of
    the constraints kept (``code``, ``pid``), and ``sets`` (sparse, one row per
    T ∈ F_p plus the empty set, 1 where g(c) ∈ T), rows grouped by p."""

    def __init__(self, problem: Problem, max_sets: int):
        t0 = time.perf_counter()
        k, group = problem.k, problem.group
        holders = _record_groups(problem.matrix, group)
        gb = _GroupBits(problem.matrix, group)
        codes, pids, rows, cols, starts = [], [], [], [], []
        n_rows, self.dropped = 0, 0
        for pid, p in enumerate(problem.constraints):
            gs, inv = np.unique(group[np.asarray(p)], return_inverse=True)
            if gb.support(gs) >= k:
                continue  # (R) asks nothing of p
            sets = _maximal_frequent(*_distinct_rows(holders[:, gs]), k, max_sets)
            if sets is None:
                self.dropped += 1
                continue
            block = sets[:, inv]  # T x codes of p
            r, c = np.nonzero(block)
            starts.append(n_rows)
            rows.append(r + n_rows)
            cols.append(c + len(codes))
            n_rows += len(sets) + 1  # the last row: T = ∅
            codes.extend(p)
            pids.extend([pid] * len(p))
        self.code = np.asarray(codes, dtype=np.int64)
        self.n_sets = n_rows
        self.sets = sp.csr_matrix(
            (np.ones(sum(map(len, rows))), (np.concatenate(rows or [[]]).astype(np.int64),
                                            np.concatenate(cols or [[]]).astype(np.int64))),
            shape=(n_rows, len(codes)))
        self.starts = np.asarray(starts, dtype=np.int64)
        self.owner = np.repeat(np.arange(len(starts)), np.diff(np.r_[self.starts, n_rows]))
        self.setup_seconds = round(time.perf_counter() - t0, 3)

    def value_and_subgradient(self, u: np.ndarray, cost: np.ndarray) -> tuple:
        n = len(cost)
        total = np.bincount(self.code, weights=u, minlength=n)
        score = self.sets @ u
        if not len(self.starts):
            return float(u.sum() + np.minimum(0.0, cost - total).sum()), 1.0 - (total > cost)[self.code]
        top = np.maximum.reduceat(score, self.starts)  # >= 0: the empty set scores 0
        value = u.sum() + np.minimum(0.0, cost - total).sum() - top.sum()
        hit = np.flatnonzero(score >= top[self.owner])
        first = hit[np.r_[True, np.diff(self.owner[hit]) > 0]]  # one best T per p
        kept = np.asarray(self.sets[first].sum(axis=0)).ravel() > 0
        return float(value), 1.0 - (total > cost)[self.code] - kept


def _maximal_frequent(rows: np.ndarray, count: np.ndarray, k: int, cap: int):
    """The maximal group sets held by >= k records, as a 0/1 matrix over the
    columns of ``rows`` (distinct record projections, with counts); None if
    more than ``cap`` frequent sets would be enumerated.  Level-wise: each
    frequent T grows by a column past its last, so every frequent set is met
    once (its prefixes are frequent too)."""
    m = rows.shape[1]
    level = np.eye(m, dtype=bool)
    level = level[count @ rows >= k]
    found, seen, size = [], 0, 1
    width = rows.sum(axis=1)
    while len(level):
        seen += len(level)
        if seen > cap:
            return None
        wide = width >= size  # only records with that many groups can hold T
        rows, count, width = rows[wide], count[wide], width[wide]
        size += 1
        held = (rows @ level.T.astype(np.float64)) == level.sum(axis=1)  # records x T
        grow = (count[:, None] * held).T @ rows  # support of T + g
        frequent = (grow >= k) & ~level
        found.append(level[~frequent.any(axis=1)])
        last = m - 1 - np.argmax(level[:, ::-1], axis=1)
        t, g = np.nonzero(frequent & (np.arange(m) > last[:, None]))
        level = level[t]
        level[np.arange(len(t)), g] = True
    return np.vstack(found) if found else np.zeros((0, m), dtype=bool)
