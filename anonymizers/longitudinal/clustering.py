"""Clustering of LDA after MDAV (Tamersoy 2011, Section IV.3.2; MDAV is
Domingo-Ferrer and Mateo-Sanz's Maximum Distance to Average Vector).

Reading chosen (the thesis gives two sentences): while at least 2k
trajectories remain, take the most frequent remaining trajectory c (the
"average" of MDAV; ties broken at random with the caller's generator: with
all trajectories distinct, c is a random one), the trajectory r most distant
from c, and form a cluster of r and the k-1 remaining trajectories nearest to
r.  Fewer than 2k left form the last cluster, around its own r.  The distance
is the alignment cost ILM + ALM returned by A-GS (or Baseline).  Ties in
distance go to the earlier trajectory in input order.  Another reading of
"we choose to add the trajectory which minimizes the sum of ILM and ALM
returned from A-GS" grows the cluster greedily against its current
anonymized trajectory; it costs k times more alignments and was not chosen.

A cluster is anonymized by aligning r with its members one after another, in
order of distance (footnote 6: X may already be an anonymized version of
other trajectories): every member is then released as the final trajectory,
and each member's pairs map, in order, onto it (or are suppressed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from anonymizers.longitudinal.alignment import Aligned, Pairs

Distance = Callable[[int, np.ndarray], np.ndarray]
Aligner = Callable[[Pairs, Pairs, float, float], Aligned]


@dataclass(frozen=True)
class Cluster:
    """``members`` in merge order (r first); ``positions[q][p]`` is the
    released position of pair p of member q, or -1 if it was suppressed."""

    members: np.ndarray
    trajectory: Pairs
    positions: list
    ilm: float
    alm: float


def mdav(n: int, k: int, distance: Distance, keys: np.ndarray,
         rng: np.random.Generator) -> list[np.ndarray]:
    """Partition trajectories 0..n-1 into clusters of at least k (n >= k)."""
    if k == 1:  # every trajectory is its own cluster; MDAV would find the same
        return [np.array([t]) for t in range(n)]
    alive = np.ones(n, dtype=bool)
    clusters = []
    while alive.any():
        rem = np.flatnonzero(alive)
        c = _mode(rem, keys, rng)
        r = int(rem[np.argmax(distance(c, rem))])
        d = distance(r, rem)
        d[rem == r] = -np.inf
        order = np.argsort(d, kind="stable")
        take = order if len(rem) < 2 * k else order[:k]
        clusters.append(rem[take])
        alive[rem[take]] = False
    return clusters


def _mode(rem: np.ndarray, keys: np.ndarray, rng: np.random.Generator) -> int:
    """The most frequent remaining trajectory; a random one among ties."""
    counts = np.bincount(keys[rem])
    tied = np.flatnonzero(counts == counts.max())
    key = tied[rng.integers(len(tied))] if len(tied) > 1 else tied[0]
    return int(rem[np.argmax(keys[rem] == key)])


def anonymize_cluster(members: np.ndarray, original: Callable[[int], Pairs],
                      align: Aligner) -> Cluster:
    """Align the members one after another into one released trajectory."""
    x = original(int(members[0]))
    positions = [np.arange(len(x))]
    ilm = alm = 0.0
    for t in members[1:]:
        y = original(int(t))
        res = align(x, y, ilm, alm)
        h, j = res.matches[:, 0], res.matches[:, 1]
        old2new = np.full(len(x) + 1, -1)
        old2new[h] = np.arange(len(h))
        positions = [old2new[np.where(p >= 0, p, len(x))] for p in positions]
        mine = np.full(len(y), -1)
        mine[j] = np.arange(len(j))
        positions.append(mine)
        x, ilm, alm = res.trajectory, res.ilm, res.alm
    return Cluster(np.asarray(members), x, positions, ilm, alm)


def trajectory_keys(icd: np.ndarray, age: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Equal ids for identical trajectories (same pairs in the same order)."""
    seen: dict[bytes, int] = {}
    out = np.empty(len(offsets) - 1, dtype=np.int64)
    both = np.stack([icd, age], axis=1).astype(np.int64)
    for t in range(len(out)):
        key = both[offsets[t]:offsets[t + 1]].tobytes()
        out[t] = seen.setdefault(key, len(seen))
    return out
