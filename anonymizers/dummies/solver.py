"""Integer programs of the plan, with as many real patients duplicated as possible.

Section 3.2 ends: "in order to avoid recognition between real patients and
fake ones, all the real ones must be duplicated".  Both programs (``plan``
and ``exact``) take it as ``dup @ v >= lo`` (``lo_p``: patients of profile p
still without a dummy, at most its unused sets).  When that makes the
program infeasible, the duplicates are maximised first and the added
occurrences minimised second (two solves), so that a release still exists
whenever one does, with the fewest real patients left without a dummy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

TIME_LIMIT = 60.0  # seconds per solve; a solution found by then is used even if not optimal
MIP_GAP = 1e-3


class SolverTimeout(Exception):
    """The solver stopped at its time limit before finding or refuting a solution."""


def solve(cost: np.ndarray, constraints: list[LinearConstraint], bounds: Bounds,
          dup: sp.csr_matrix, lo: np.ndarray) -> tuple[np.ndarray | None, bool]:
    """Integer solution (all variables integer) or None when infeasible even
    with no duplicate required; also whether it is proven optimal."""
    need = np.flatnonzero(lo > 0)
    d = sp.csr_matrix(dup)[need]
    hard = constraints + ([LinearConstraint(d, lo[need], np.inf)] if len(need) else [])
    x, optimal = _run(cost, hard, bounds)
    if x is not None or not len(need):
        return x, optimal
    # u_p <= lo_p, u_p <= dup_p . v: first maximise sum u, then minimise the cost
    n_v, n_u = len(cost), len(need)
    link = sp.hstack([-d, sp.identity(n_u)])
    wide = [LinearConstraint(sp.hstack([c.A, sp.csr_matrix((c.A.shape[0], n_u))]), c.lb, c.ub)
            for c in constraints] + [LinearConstraint(link, -np.inf, 0)]
    wb = Bounds(np.concatenate([bounds.lb, np.zeros(n_u)]),
                np.concatenate([bounds.ub, lo[need].astype(float)]))
    first, _ = _run(np.concatenate([np.zeros(n_v), -np.ones(n_u)]), wide, wb)
    if first is None:
        return None, True
    best = float(np.rint(first[n_v:]).sum())
    total = LinearConstraint(np.concatenate([np.zeros(n_v), np.ones(n_u)])[None, :], best, np.inf)
    x, optimal = _run(np.concatenate([cost, np.zeros(n_u)]), wide + [total], wb)
    return (None if x is None else x[:n_v]), optimal


def _run(cost, constraints, bounds) -> tuple[np.ndarray | None, bool]:
    res = milp(cost, constraints=constraints, integrality=np.ones(len(cost)), bounds=bounds,
               options={"time_limit": TIME_LIMIT, "mip_rel_gap": MIP_GAP})
    if res.status == 2:
        return None, True
    if res.x is None:
        raise SolverTimeout(f"the integer program ({len(cost)} variables) was not decided "
                            f"within {TIME_LIMIT:.0f} s: {res.message}")
    return np.rint(res.x).astype(np.int64), res.status == 0
