"""Opt-in post-pass over MDAV's clusters, not in Tamersoy 2011 (``LDAConfig.refine_rounds``).

MDAV (IV.3.2) never revisits a cluster: a trajectory taken early by a cluster
it fits badly stays there.  Each round of this pass

1. prices every trajectory t in its cluster A: the growth cost of A minus that
   of A re-anonymized without t (``share``), and against every cluster B: the
   A-GS cost of adding t to B's anonymized trajectory (``inc``), the same two
   quantities the greedy growth compares;
2. lists moves (t to B, when A has more than k members) and swaps (t with u
   of B) among t's three cheapest other clusters whose estimate
   ``share[t] + share[u] - inc[t, B] - inc[u, A]`` is positive, best first;
3. re-anonymizes both clusters of each listed change (greedy order from the
   cluster's first member) and keeps it only if ``loss`` of the two clusters
   falls, each cluster changing at most once a round.

Every cluster keeps k..2k-1 members (a swap keeps sizes, a move needs more
than k in A and B grows by one only if it had fewer than 2k-1), and every
cluster is still released as one anonymized trajectory shared by all its
members, so k-anonymity is untouched; ``loss`` is what ILM and ALM of the
release measure (Definition 8), so a kept change never raises w_ICD*ILM +
w_Age*ALM.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from anonymizers.longitudinal.clustering import Cluster, FromCluster, Grow

N_NEAREST = 3  # other clusters screened per trajectory


def refine(clusters: list[Cluster], k: int, rounds: int, grow: Grow,
           from_cluster: FromCluster, loss: Callable[[Cluster], float]) -> list[Cluster]:
    """Up to ``rounds`` rounds of the module doc; stops at a round that keeps
    nothing.  At k = 1 every trajectory is its own cluster, released as it is:
    nothing to refine."""
    clusters = list(clusters)
    for _ in range(rounds if k > 1 else 0):
        if len(clusters) < 2 or not _round(clusters, k, grow, from_cluster, loss):
            break
    return clusters


def _regrow(members: list[int], grow: Grow) -> Cluster:
    return grow(int(members[0]), np.asarray(members[1:], dtype=np.int64), len(members) - 1)


def _cost(cluster: Cluster) -> float:
    return cluster.ilm + cluster.alm


def _prices(clusters, grow, from_cluster):
    n = sum(len(c.members) for c in clusters)
    where = np.empty(n, dtype=np.int64)
    for ci, c in enumerate(clusters):
        where[c.members] = ci
    everyone = np.arange(n)
    inc = np.column_stack([from_cluster(c.trajectory, everyone, len(c.members))
                           for c in clusters])
    share = np.empty(n)
    for c in clusters:
        for t in c.members:
            rest = [int(u) for u in c.members if u != t]
            share[t] = _cost(c) - _cost(_regrow(rest, grow))
    return where, inc, share


def _changes(clusters, k, where, inc, share):
    out = []
    for t in range(len(where)):
        a = where[t]
        near = [b for b in np.argsort(inc[t], kind="stable") if b != a][:N_NEAREST]
        for b in near:
            movable = len(clusters[a].members) > k and len(clusters[b].members) < 2 * k - 1
            if movable and share[t] > inc[t, b]:
                out.append((share[t] - inc[t, b], t, None, b))
            for u in clusters[b].members:
                est = share[t] + share[u] - inc[t, b] - inc[u, a]
                if est > 0:
                    out.append((est, t, int(u), b))
    out.sort(key=lambda c: -c[0])
    return out


def _round(clusters, k, grow, from_cluster, loss) -> bool:
    where, inc, share = _prices(clusters, grow, from_cluster)
    touched, kept = set(), False
    for _, t, u, b in _changes(clusters, k, where, inc, share):
        a = where[t]
        if a in touched or b in touched:
            continue
        new_a = [int(x) for x in clusters[a].members if x != t] + ([u] if u is not None else [])
        new_b = [int(x) for x in clusters[b].members if x != u] + [t]
        ca, cb = _regrow(new_a, grow), _regrow(new_b, grow)
        if loss(ca) + loss(cb) < loss(clusters[a]) + loss(clusters[b]) - 1e-12:
            clusters[a], clusters[b] = ca, cb
            touched |= {a, b}
            kept = True
    return kept
