"""How many dummies of each size profile, planned for all clusters at once.

Section 3.2's concern is that "filling a cluster leads the other ones to
overflow": a dummy copies its source's number of codes in *every* cluster,
so dummies made to fill cluster i also add to every other cluster.  Filling
one cluster at a time and correcting afterwards (the report's rounds)
chases its own tail when patients span clusters (the green line above the
red one in Fig. 6).  Reading chosen: the dummies of all clusters are
planned together, as an integer program over the size profiles
(``profiles.py``), so that each cluster receives what flattens it and no more.

Variables: ``x_p`` dummies of profile ``p`` (integer, ``lo_p <= x_p <= cap_p``).
With ``add_j = sum_p k_pj x_p`` and current frequencies ``f_c``, cluster
``j`` ends flat within 1 (3.3) at level ``T`` exactly when

    sum_c max(0, T - 1 - f_c) <= add_j <= sum_c (T - f_c)           (band)

For ``T > top_j`` the bands of consecutive levels meet, so every ``add_j``
from ``L_j = sum_c max(0, top_j - 1 - f_c)`` on is flat at the level
``T_j = max(top_j, ceil((occ_j + add_j) / n_j))``, and the band reduces to
the covering row ``add_j >= L_j``; no level variable is needed.

The codes' shares must also be realisable by dummies with distinct codes
(Gale-Ryser): for every ``t``, the ``t`` largest code deficits sum to at most
``R_tj = sum_p x_p min(k_pj, t)``.  A deficit is at most ``T_j - f_c`` and
``T_j <= max(top_j, (occ_j + add_j + n_j - 1) / n_j)``, so

    R_tj >= t top_j - S_tj   and   R_tj - t add_j / n_j >= t (occ_j + n_j - 1) / n_j - S_tj

(``S_tj``: the ``t`` lowest frequencies of cluster ``j``) are *sufficient*.
A cluster already flat within 1 needs no such row: its deficits can be
chosen to differ by at most 1 (``waterfill.deficits``), which any dummies
can realise.
A deficit is at least ``T_j - 1 - f_c`` and ``T_j >= max(top_j, (occ_j +
add_j) / n_j)``, which gives the *necessary* rows (right sides lowered by
``t`` and, in the second, without the ``n_j - 1``).  The objective is the
number of code occurrences added, i.e. the real ratio of Fig. 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint

from anonymizers.dummies import solver

X_MAX = 10 ** 9  # dummies per profile the solver may consider (a profile's unused sets, clipped)


@dataclass(frozen=True)
class ClusterState:
    """Frequencies of one cluster's codes and the summaries the plan needs."""

    freq: np.ndarray

    @property
    def n(self) -> int:
        return len(self.freq)

    @property
    def top(self) -> int:
        return int(self.freq.max())

    @property
    def occ(self) -> int:
        return int(self.freq.sum())

    @property
    def at_top(self) -> int:
        return int((self.freq == self.top).sum())

    def lowest_sums(self, t_max: int) -> np.ndarray:
        """``S_t`` for t = 1..t_max: sum of the t lowest frequencies."""
        return np.cumsum(np.sort(self.freq))[:t_max]


@dataclass(frozen=True)
class Plan:
    """Dummies per profile and the level each cluster is filled to."""

    x: np.ndarray
    level: np.ndarray
    optimal: bool


def plan_profiles(k: np.ndarray, lo: np.ndarray, cap: np.ndarray,
                  clusters: list[ClusterState], sufficient: bool = True) -> Plan | None:
    """Solve the program of the module docstring; None when it is infeasible.

    ``k`` is profiles x clusters (codes per cluster); ``cap`` bounds the
    dummies per profile (clipped at ``X_MAX``), ``lo`` asks for duplicates
    as far as possible (``solver``); ``sufficient`` picks the Gale-Ryser side.
    """
    k = np.asarray(k, dtype=np.int64)
    n_p = k.shape[0]
    rows, lo_b = [], []
    for j, cl in enumerate(clusters):
        kj = k[:, j].astype(float)
        rows.append(kj)                                   # cover: add_j >= L_j
        lo_b.append(float(np.maximum(0, cl.top - 1 - cl.freq).sum()))
        if np.ptp(cl.freq) > 1:  # flat clusters meet Gale-Ryser anyway (``waterfill.deficits``)
            _ryser_rows(kj, cl, sufficient, rows, lo_b)
    a = sp.csr_matrix(np.vstack(rows))
    cost = k.sum(axis=1).astype(float)
    sol, optimal = solver.solve(cost, [LinearConstraint(a, lo_b, np.inf)],
                                Bounds(np.zeros(n_p), np.minimum(cap, X_MAX).astype(float)),
                                sp.identity(n_p, format="csr"), np.asarray(lo))
    if sol is None:
        return None
    add = k.T @ sol
    return Plan(x=sol, level=np.array([level(cl, int(a_j)) for cl, a_j in zip(clusters, add)]),
                optimal=optimal)


def level(cl: ClusterState, add: int) -> int:
    """The level a cluster reaches, flat within 1, with ``add`` more occurrences."""
    return max(cl.top, -(-(cl.occ + add) // cl.n))


def _ryser_rows(kj: np.ndarray, cl: ClusterState, sufficient: bool, rows, lo_b) -> None:
    t_max = int(min(kj.max(initial=0), cl.n))
    sums = cl.lowest_sums(t_max)
    for t in range(1, t_max + 1):
        r = np.minimum(kj, t)
        slack = 0 if sufficient else t
        rows.append(r)
        lo_b.append(t * cl.top - sums[t - 1] - slack)
        rows.append(r - t * kj / cl.n)
        lo_b.append(t * (cl.occ + (cl.n - 1 if sufficient else 0)) / cl.n - sums[t - 1] - slack)
