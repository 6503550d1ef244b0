"""The generalization lattice and its search (El Emam et al. 2012, appendix section 5; ref. [13]):
entropy information loss, greedy descent then completion, monotonicity pruning.
Readings chosen and why: docs/methods/hhp.md#claims-lattice."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from anonymizers.claims.recoding import Prepared
from anonymizers.claims.risk import NodeRisk
from anonymizers.errors import ParameterError

MAX_NODES = 2_000_000


@dataclass(frozen=True)
class Lattice:
    names: tuple[str, ...]
    level_names: tuple[tuple[str, ...], ...]
    nodes: np.ndarray
    loss: np.ndarray
    qi_loss: tuple[np.ndarray, ...]

    def index(self, node: tuple[int, ...]) -> int:
        radix = np.array([len(v) for v in self.level_names], dtype=np.int64)
        at = 0
        for level, r in zip(node, radix):
            at = at * r + int(level)
        return at

    def describe(self, node: tuple[int, ...]) -> dict[str, str]:
        return {n: lv[i] for n, lv, i in zip(self.names, self.level_names, node)}

    def node_from_names(self, levels: dict[str, str]) -> tuple[int, ...]:
        """A node from ``{qi: level name}``; unnamed QIs at their top level."""
        unknown = set(levels) - set(self.names)
        if unknown:
            raise ParameterError("node", f"unknown or unused quasi-identifiers {sorted(unknown)}; "
                                 f"used: {list(self.names)}")
        out = []
        for name, names in zip(self.names, self.level_names):
            wanted = levels.get(name, names[-1])
            if wanted not in names:
                raise ParameterError("node", f"{name} has levels {list(names)}, not {wanted!r}")
            out.append(names.index(wanted))
        return tuple(out)


def entropy(labels: np.ndarray) -> float:
    counts = np.bincount(labels) if len(labels) else np.zeros(0)
    p = counts[counts > 0] / max(len(labels), 1)
    return float(-(p * np.log(p)).sum())


def build_lattice(prep: Prepared) -> Lattice:
    """Every node, with its information loss."""
    sizes = [len(q.level_names) for q in prep.qis]
    total = int(np.prod(sizes)) if sizes else 1
    if total > MAX_NODES:
        raise ParameterError("qis", f"the lattice has {total} nodes (more than {MAX_NODES}); "
                             "use fewer quasi-identifiers or levels")
    qi_loss = []
    for q in prep.qis:
        h = np.array([entropy(q.at(lv)) for lv in range(len(q.level_names))])
        qi_loss.append(1.0 - h / h[0] if h[0] > 0 else np.zeros(len(h)))
    nodes = np.array(list(itertools.product(*[range(s) for s in sizes])), dtype=np.int64)
    nodes = nodes.reshape(total, len(sizes))
    loss = (np.mean([qi_loss[j][nodes[:, j]] for j in range(len(sizes))], axis=0)
            if sizes else np.zeros(1))
    return Lattice(tuple(q.name for q in prep.qis), tuple(q.level_names for q in prep.qis),
                   nodes, np.asarray(loss, dtype=np.float64), tuple(qi_loss))


@dataclass(frozen=True)
class SearchResult:
    chosen: NodeRisk | None
    evaluated: tuple[NodeRisk, ...]
    complete: bool


def search(lattice: Lattice, evaluate: Callable[[tuple[int, ...]], NodeRisk],
           max_evaluations: int) -> SearchResult:
    """Least-IL candidate node (docs/methods/hhp.md#claims-lattice)."""
    nodes, loss = lattice.nodes, lattice.loss
    rank = np.lexsort((np.arange(len(nodes)), nodes.sum(axis=1), loss))
    known: dict[int, NodeRisk] = {}
    failed = np.zeros(len(nodes), dtype=bool)

    def run(i: int) -> NodeRisk:
        r = evaluate(tuple(int(x) for x in nodes[i]))
        known[i] = r
        if not r.candidate:
            failed[:] |= (nodes <= nodes[i]).all(axis=1)
        return r

    top = len(nodes) - 1
    if not run(top).candidate:
        return SearchResult(None, tuple(known.values()), True)
    best = _descend(lattice, top, known, failed, run, max_evaluations)
    complete, at = True, 0
    while True:
        while at < len(rank) and (failed[rank[at]] or rank[at] in known):
            at += 1
        if at == len(rank) or loss[rank[at]] >= loss[best]:
            break
        if len(known) >= max_evaluations:
            complete = False
            break
        y = _climb(lattice, int(rank[at]), loss[best], known)
        if run(y).candidate:
            best = _descend(lattice, y, known, failed, run, max_evaluations)
    return SearchResult(known[best], tuple(known.values()), complete)


def _climb(lattice: Lattice, i: int, bound: float, known: dict) -> int:
    """A node above ``i`` with IL below ``bound``, raised one level at a time
    (least IL increase first) while that stays below ``bound``: if it fails,
    its whole down-set is pruned at once; if it passes, it is a better incumbent."""
    node = lattice.nodes[i].copy()
    tops = np.array([len(v) - 1 for v in lattice.level_names])
    while True:
        options = []
        for j in np.flatnonzero(node < tops):
            up = node.copy()
            up[j] += 1
            u = lattice.index(tuple(up))
            if lattice.loss[u] < bound and u not in known:
                options.append((lattice.loss[u], u))
        if not options:
            return lattice.index(tuple(node))
        node = lattice.nodes[min(options)[1]].copy()


def _descend(lattice, best, known, failed, run, budget) -> int:
    while len(known) < budget:
        children = _children(lattice, best)
        moved = False
        for c in sorted(children, key=lambda c: (lattice.loss[c], c)):
            if failed[c]:
                continue
            r = known.get(c)
            if r is None:
                if len(known) >= budget:
                    return best
                r = run(c)
            if r.candidate:
                best, moved = c, True
                break
        if not moved:
            return best
    return best


def _children(lattice: Lattice, i: int) -> list[int]:
    node = lattice.nodes[i]
    out = []
    for j in range(len(node)):
        if node[j] > 0:
            child = node.copy()
            child[j] -= 1
            out.append(lattice.index(tuple(child)))
    return out
