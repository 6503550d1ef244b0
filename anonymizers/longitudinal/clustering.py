"""LDA's clustering after MDAV (Tamersoy 2011, IV.3.2): clusters grown greedily around the
trajectory farthest from the most frequent one, by A-GS cost against the cluster's trajectory.
Readings chosen and why: docs/methods/lda.md#longitudinal-clustering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from anonymizers.longitudinal.alignment import Aligned, Pairs

Distance = Callable[[int, np.ndarray], np.ndarray]
# align(X, Y, ILM(X), ALM(X), members X stands for); from_cluster(X, candidates, members)
Aligner = Callable[[Pairs, Pairs, float, float, int], Aligned]
FromCluster = Callable[[Pairs, np.ndarray, int], np.ndarray]


@dataclass(frozen=True)
class Cluster:
    """``members`` in merge order (r first); ``positions[q][p]`` is the
    released position of pair p of member q, or -1 if it was suppressed."""

    members: np.ndarray
    trajectory: Pairs
    positions: list
    ilm: float
    alm: float


Grow = Callable[[int, np.ndarray, int], Cluster]


def mdav(n: int, k: int, distance: Distance, keys: np.ndarray,
         rng: np.random.Generator, grow: Grow,
         first: Callable[[np.ndarray], int] | None = None) -> list[Cluster]:
    """Partition trajectories 0..n-1 into clusters of k to 2k-1 (n >= k).

    ``grow(r, candidates, m)`` forms the cluster of ``r`` and ``m`` of the
    ``candidates`` (ascending indices).  ``first(remaining)``, when given,
    picks ``r`` instead of MDAV's farthest-from-the-mode (an opt-in)."""
    alive = np.ones(n, dtype=bool)
    clusters = []
    while alive.any():
        rem = np.flatnonzero(alive)
        if k == 1:  # every trajectory is its own cluster; MDAV would find the same
            r = int(rem[0])
        elif first is not None:
            r = int(first(rem))
        else:
            c = _mode(rem, keys, rng)
            r = int(rem[np.argmax(distance(c, rem))])
        others = rem[rem != r]
        cluster = grow(r, others, len(others) if len(rem) < 2 * k else k - 1)
        clusters.append(cluster)
        alive[cluster.members] = False
    return clusters


def _mode(rem: np.ndarray, keys: np.ndarray, rng: np.random.Generator) -> int:
    """The most frequent remaining trajectory; a random one among ties."""
    counts = np.bincount(keys[rem])
    tied = np.flatnonzero(counts == counts.max())
    key = tied[rng.integers(len(tied))] if len(tied) > 1 else tied[0]
    return int(rem[np.argmax(keys[rem] == key)])


class Growing:
    """A cluster being formed: its anonymized trajectory X so far (with
    ILM(X), ALM(X)) and where every member's pairs went."""

    def __init__(self, r: int, original: Callable[[int], Pairs], align: Aligner):
        self.original, self.align = original, align
        self.x = original(r)
        self.members = [r]
        self.positions = [np.arange(len(self.x))]
        self.ilm = self.alm = 0.0

    def add(self, t: int) -> None:
        """Align member ``t`` into X (Algorithm 3 with X's ILM and ALM)."""
        y = self.original(t)
        res = self.align(self.x, y, self.ilm, self.alm, len(self.members))
        h, j = res.matches[:, 0], res.matches[:, 1]
        old2new = np.full(len(self.x) + 1, -1)
        old2new[h] = np.arange(len(h))
        self.positions = [old2new[np.where(p >= 0, p, len(self.x))] for p in self.positions]
        mine = np.full(len(y), -1)
        mine[j] = np.arange(len(j))
        self.positions.append(mine)
        self.members.append(int(t))
        self.x, self.ilm, self.alm = res.trajectory, res.ilm, res.alm

    def freeze(self) -> Cluster:
        return Cluster(np.asarray(self.members), self.x, self.positions, self.ilm, self.alm)


def greedy(original: Callable[[int], Pairs], align: Aligner, from_cluster: FromCluster) -> Grow:
    """The cluster-forming step of the module doc: ``from_cluster(X, cands,
    members)`` is the alignment cost of X against each candidate.
    ``grow(r, rest, len(rest))`` re-anonymizes a fixed member set."""
    return _growing(original, align, from_cluster,
                    lambda cluster, left, costs: int(np.argmin(costs)))  # first of ties


def lookahead(original: Callable[[int], Pairs], align: Aligner, from_cluster: FromCluster,
              score: Callable[[Pairs], float], shortlist: int,
              trial: Aligner | None = None) -> Grow:
    """Opt-in, not in IV.3.2: ``greedy`` that aligns X with each of its
    ``shortlist`` (>= 1) cheapest candidates through ``trial`` (default
    ``align``; a counting wrapper, say) and adds the one whose new X scores
    highest (the cheapest of those tied); shared_codes.kept_score is the score."""
    if shortlist < 1:
        raise ValueError("lookahead: the shortlist needs at least one candidate")
    trial = trial or align

    def best(cluster: Growing, left: np.ndarray, costs: np.ndarray) -> int:
        ranked = np.argsort(costs, kind="stable")[:shortlist]  # first of ties first
        if len(ranked) == 1:
            return int(ranked[0])
        scores = [score(trial(cluster.x, original(int(left[c])), cluster.ilm, cluster.alm,
                              len(cluster.members)).trajectory) for c in ranked]
        return int(ranked[int(np.argmax(scores))])  # first of the best: the cheapest
    return _growing(original, align, from_cluster, best)


def _growing(original, align, from_cluster, choose) -> Grow:
    """Grow a cluster from ``r`` by ``m`` candidates, each the one
    ``choose(cluster, left, costs)`` picks among those left."""
    def grow(r: int, candidates: np.ndarray, m: int) -> Cluster:
        cluster = Growing(r, original, align)
        left = np.asarray(candidates)
        for _ in range(m):
            pick = choose(cluster, left, from_cluster(cluster.x, left, len(cluster.members)))
            cluster.add(int(left[pick]))
            left = np.delete(left, pick)
        return cluster.freeze()
    return grow


def anonymize_cluster(members: np.ndarray, original: Callable[[int], Pairs],
                      align: Aligner) -> Cluster:
    """Align the members one after another, in the order given."""
    cluster = Growing(int(members[0]), original, align)
    for t in members[1:]:
        cluster.add(int(t))
    return cluster.freeze()


def trajectory_keys(icd: np.ndarray, age: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Equal ids for identical trajectories (same pairs in the same order)."""
    seen: dict[bytes, int] = {}
    out = np.empty(len(offsets) - 1, dtype=np.int64)
    both = np.stack([icd, age], axis=1).astype(np.int64)
    for t in range(len(out)):
        key = both[offsets[t]:offsets[t + 1]].tobytes()
        out[t] = seen.setdefault(key, len(seen))
    return out
