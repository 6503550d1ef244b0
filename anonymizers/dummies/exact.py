"""Exact dummy sets for small inputs (Zoveralli 3.1-3.3): a 0-1 program over every unused code
set of the real size profiles, which finds a release or proves that none exists.
Readings chosen and why: docs/methods/medco.md#dummies-exact."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint

from anonymizers.dummies import solver
from anonymizers.dummies.arrays import member

LIMIT = 20_000  # listed sets, over all profiles, up to which the exact program is used
RESCUE_LIMIT = 20_000  # the same, when the plan route stalled (``generate``)


@dataclass(frozen=True)
class Candidates:
    """Unused code sets: ``sets[i]`` (sorted code indices) of profile ``profile[i]``."""

    profile: np.ndarray
    sets: list[np.ndarray]


def candidates(profiles, first_patient: np.ndarray, cap: np.ndarray, keys: np.ndarray,
               existing: np.ndarray, limit: int | None = None,
               sample: tuple[int, np.random.Generator] | None = None) -> Candidates | None:
    """Every unused set of every profile with room, or None past ``limit``
    (default ``LIMIT``) sets.  With ``sample = (n, rng)``, a profile with
    more than ``limit`` sets contributes ``n`` random ones instead (the
    program is then no longer exact: it may miss a release, never make a
    wrong one)."""
    limit = LIMIT if limit is None else limit
    big = profiles.possible > limit
    if sample is None and int(np.minimum(profiles.possible, limit + 1)[cap > 0].sum()) > limit:
        return None
    prof, sets = [], []
    for p in np.flatnonzero(cap > 0):
        if big[p] and sample is not None:
            rows = _random_sets(profiles, int(first_patient[p]), *sample)
        else:
            rows = profiles.enumerate(int(first_patient[p]), limit)
        h = keys[rows].sum(axis=1, dtype=np.uint64)
        _, first = np.unique(h, return_index=True)
        keep = np.zeros(len(h), dtype=bool)
        keep[first] = True
        rows = rows[keep & ~member(existing, h)]
        prof.append(np.full(len(rows), p))
        sets.extend(rows)
    profile = np.concatenate(prof) if prof else np.zeros(0, dtype=np.int64)
    return Candidates(profile=profile, sets=sets)


def _random_sets(profiles, patient: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` random code sets (rows, sorted) of ``patient``'s profile."""
    row = profiles.counts[patient]
    parts = [np.argsort(rng.random((n, len(profiles.clusters[j]))), axis=1)[:, :k]
             for j, k in zip(row.indices, row.data)]
    codes = [profiles.clusters[j][part] for j, part in zip(row.indices, parts)]
    return np.sort(np.concatenate(codes, axis=1), axis=1)


def solve(cand: Candidates, freq: np.ndarray, cluster_of: np.ndarray, n_clusters: int,
          lo: np.ndarray) -> list[int] | None:
    """Indices of the chosen candidate sets, or None when no choice exists
    (proven: the program is exact).  Raises ``solver.SolverTimeout`` when the
    solver stops before deciding."""
    n_s, n_codes = len(cand.sets), len(freq)
    top = np.zeros(n_clusters, dtype=np.int64)
    np.maximum.at(top, cluster_of, freq)
    lengths = np.array([len(s) for s in cand.sets], dtype=np.int64)
    incidence = sp.csr_matrix((np.ones(int(lengths.sum())),
                               (np.concatenate(cand.sets) if n_s else np.zeros(0, int),
                                np.repeat(np.arange(n_s), lengths))), shape=(n_codes, n_s))
    z_part = sp.csr_matrix((-np.ones(n_codes), (np.arange(n_codes), cluster_of)),
                           shape=(n_codes, n_clusters))
    flat = sp.hstack([incidence, z_part, -sp.identity(n_codes)], format="csr")
    rhs = (top[cluster_of] - 1 - freq).astype(float)
    n_p = len(lo)
    dup = sp.csr_matrix((np.ones(n_s), (cand.profile, np.arange(n_s))), shape=(n_p, n_s))
    dup = sp.hstack([dup, sp.csr_matrix((n_p, n_clusters + n_codes))], format="csr")
    cost = np.concatenate([lengths, np.zeros(n_clusters + n_codes)]).astype(float)
    upper = np.concatenate([np.ones(n_s), np.full(n_clusters, n_s + 1), np.ones(n_codes)])
    x, _ = solver.solve(cost, [LinearConstraint(flat, rhs, rhs)],
                        Bounds(np.zeros(len(cost)), upper), dup, np.asarray(lo))
    return None if x is None else np.flatnonzero(x[:n_s] > 0).tolist()
