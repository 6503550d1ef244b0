"""Opt-in post-pass over MDAV's clusters, not in Tamersoy 2011 (``LDAConfig.refine_rounds``).

MDAV (IV.3.2) never revisits a cluster: a trajectory taken early by a cluster
it fits badly stays there.  Each round of this pass

1. prices every trajectory t in its cluster A: the growth cost of A minus that
   of A re-anonymized without t (``share``), and against every cluster B: the
   A-GS cost of adding t to B's anonymized trajectory (``inc``), the same two
   quantities the greedy growth compares (the n x clusters table of ``inc``
   is never held: per t only its cheapest clusters are kept, and the
   ``inc[u, A]`` a swap needs are aligned on demand, so memory stays
   O(n k) a round; see ``_nearest`` and ``_swap_prices``);
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
BLOCK = 16  # columns of the price table held at once (_nearest)


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
    """``where`` (each trajectory's cluster), ``share`` and, per trajectory,
    its ``N_NEAREST + 1`` cheapest clusters with their ``inc`` (``_nearest``)."""
    n = sum(len(c.members) for c in clusters)
    where = np.empty(n, dtype=np.int64)
    for ci, c in enumerate(clusters):
        where[c.members] = ci
    share = np.empty(n)
    for c in clusters:
        for t in c.members:
            rest = [int(u) for u in c.members if u != t]
            share[t] = _cost(c) - _cost(_regrow(rest, grow))
    return where, share, _nearest(clusters, n, from_cluster)


def _nearest(clusters, n, from_cluster):
    """Per trajectory t, the ``N_NEAREST + 1`` smallest ``inc[t, B]`` and their
    B, cheapest first, ties to the lower B (a stable argsort of t's row of
    the full table), without holding the n x clusters table: ``BLOCK``
    columns at a time are merged into the running best.  One more than
    ``N_NEAREST`` because t's own cluster may be among them."""
    keep = min(N_NEAREST + 1, len(clusters))
    everyone = np.arange(n)
    cost, idx = np.empty((n, 0)), np.empty((n, 0), dtype=np.int64)
    for start in range(0, len(clusters), BLOCK):
        block = clusters[start:start + BLOCK]
        cols = np.column_stack([from_cluster(c.trajectory, everyone, len(c.members))
                                for c in block])
        # the running best (lower B) first, so a stable sort breaks ties to the lower B
        cost = np.concatenate([cost, cols], axis=1)
        idx = np.concatenate([idx, np.broadcast_to(np.arange(start, start + len(block)),
                                                   cols.shape)], axis=1)
        order = np.argsort(cost, axis=1, kind="stable")[:, :keep]
        cost, idx = np.take_along_axis(cost, order, 1), np.take_along_axis(idx, order, 1)
    return cost, idx


def _changes(clusters, k, where, share, nearest, from_cluster):
    """The listed changes of the module doc, best first."""
    near_cost, near_idx = nearest
    near = [[(c, b) for c, b in zip(near_cost[t], near_idx[t]) if b != where[t]][:N_NEAREST]
            for t in range(len(where))]
    inc = _swap_prices(clusters, where, near, from_cluster)
    out = []
    for t, screened in enumerate(near):
        a = where[t]
        for inc_tb, b in screened:
            movable = len(clusters[a].members) > k and len(clusters[b].members) < 2 * k - 1
            if movable and share[t] > inc_tb:
                out.append((share[t] - inc_tb, t, None, b))
            for u, inc_ua in zip(clusters[b].members, inc[(a, b)]):
                est = share[t] + share[u] - inc_tb - inc_ua
                if est > 0:
                    out.append((est, t, int(u), b))
    out.sort(key=lambda c: -c[0])
    return out


def _swap_prices(clusters, where, near, from_cluster) -> dict:
    """``inc[u, A]`` for the members u of every B screened by a member of A:
    (A, B) -> one value per member of B, in member order; one batch of
    alignments per A.  ``batch.ags_costs`` runs each candidate's recurrence
    on its own row (cumulative sums and minima up to its length), so these
    equal the full table's entries bit for bit; ``baseline_costs`` sums
    padded rows, whose rounding could in principle depend on the padding,
    and was measured equal too (tests/anonymizers/test_longitudinal_refine_memory.py
    compares releases for both).  These alignments add to ``n_alignments``."""
    wanted: dict[int, list[int]] = {}
    for t, screened in enumerate(near):
        bs = wanted.setdefault(int(where[t]), [])
        bs.extend(int(b) for _, b in screened if int(b) not in bs)
    out = {}
    for a, bs in wanted.items():
        if not bs:
            continue
        members = [clusters[b].members for b in bs]
        costs = from_cluster(clusters[a].trajectory, np.concatenate(members),
                             len(clusters[a].members))
        for b, part in zip(bs, np.split(costs, np.cumsum([len(m) for m in members])[:-1])):
            out[(a, b)] = part
    return out


def _round(clusters, k, grow, from_cluster, loss) -> bool:
    where, share, nearest = _prices(clusters, grow, from_cluster)
    touched, kept = set(), False
    for _, t, u, b in _changes(clusters, k, where, share, nearest, from_cluster):
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
