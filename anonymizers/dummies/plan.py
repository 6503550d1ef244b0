"""How many dummies of each size profile (Zoveralli 3.2), planned for all clusters at once: one
integer program with covering and Gale-Ryser rows, minimising the code occurrences added.
Readings chosen and why: docs/methods/medco.md#dummies-plan."""

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

    def base_deficits(self, t_max: int) -> np.ndarray:
        """``B_t`` for t = 1..t_max: what the t lowest codes need to reach ``top - 1``."""
        return np.cumsum(np.maximum(0, self.top - 1 - np.sort(self.freq)))[:t_max]


@dataclass(frozen=True)
class Plan:
    """Dummies per profile and the level each cluster is filled to."""

    x: np.ndarray
    level: np.ndarray
    optimal: bool


def plan_profiles(k: np.ndarray, lo: np.ndarray, cap: np.ndarray,
                  clusters: list[ClusterState], sufficient: bool = True) -> Plan | None:
    """Solve the program of docs/methods/medco.md#dummies-plan; None when it is infeasible.

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
    """Gale-Ryser rows of docs/methods/medco.md#dummies-plan: the sufficient ones bound
    the t largest deficits ``waterfill.deficits`` pours (not any deficits
    allowed by the band), the necessary ones those of any flat filling."""
    t_max = int(min(kj.max(initial=0), cl.n))
    sums = cl.lowest_sums(t_max)
    base = cl.base_deficits(t_max)
    for t in range(1, t_max + 1):
        r = np.minimum(kj, t)
        rows.append(r)
        lo_b.append(base[t - 1] if sufficient else t * cl.top - sums[t - 1] - t)
        rows.append(r - t * kj / cl.n)
        lo_b.append(t * cl.occ / cl.n - sums[t - 1] - (0 if sufficient else t))
