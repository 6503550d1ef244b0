"""The lattice search split into parts that run apart (El Emam et al. 2012, appendix section 5):
one part per level of the split QI (DSFC); the best over the parts is the single search's node.
Readings chosen and why: docs/methods/hhp.md#claims-partition."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from anonymizers.claims.lattice import Lattice, SearchResult, search
from anonymizers.claims.risk import NodeRisk
from anonymizers.errors import ParameterError

SPLIT_QI = "dsfc"


@dataclass(frozen=True)
class PartResult:
    """One part's search: its number, least-loss candidate (or None), every
    node it evaluated (full-lattice nodes) and whether it finished."""

    part: int
    chosen: NodeRisk | None
    evaluated: tuple[NodeRisk, ...]
    complete: bool


def split_qi(lattice: Lattice) -> int:
    """Index of the QI the lattice is cut by (docs/methods/hhp.md#claims-partition)."""
    if SPLIT_QI in lattice.names:
        return lattice.names.index(SPLIT_QI)
    sizes = [len(v) for v in lattice.level_names]
    return int(np.argmax(sizes))


def n_parts(lattice: Lattice) -> int:
    return len(lattice.level_names[split_qi(lattice)])


def sub_lattice(lattice: Lattice, part: int) -> Lattice:
    """The nodes of ``part`` as a lattice of their own (split QI at one level)."""
    j = split_qi(lattice)
    if not 0 <= part < n_parts(lattice):
        raise ParameterError("part", f"the lattice has {n_parts(lattice)} parts, not part {part}")
    keep = lattice.nodes[:, j] == part
    nodes = lattice.nodes[keep].copy()
    nodes[:, j] = 0
    level_names = list(lattice.level_names)
    level_names[j] = (lattice.level_names[j][part],)
    qi_loss = list(lattice.qi_loss)
    qi_loss[j] = np.array([lattice.qi_loss[j][part]])
    return Lattice(lattice.names, tuple(level_names), nodes, lattice.loss[keep], tuple(qi_loss))


def search_part(lattice: Lattice, part: int, evaluate: Callable[[tuple[int, ...]], NodeRisk],
                max_evaluations: int) -> PartResult:
    """``search`` on one part; ``evaluate`` takes and returns full-lattice nodes."""
    j = split_qi(lattice)

    def lifted(node: tuple[int, ...]) -> NodeRisk:
        return evaluate(node[:j] + (part,) + node[j + 1:])

    r: SearchResult = search(sub_lattice(lattice, part), lifted, max_evaluations)
    return PartResult(part, r.chosen, r.evaluated, r.complete)


def best_of(lattice: Lattice, results: list[PartResult]) -> NodeRisk | None:
    """The release's node: least loss, then fewest levels, then index."""
    chosen = [r.chosen for r in results if r.chosen is not None]
    if not chosen:
        return None

    def key(r: NodeRisk):
        i = lattice.index(r.node)
        return (lattice.loss[i], sum(r.node), i)

    return min(chosen, key=key)


def group(parts: int, per_task: int) -> list[list[int]]:
    """Consecutive parts, ``per_task`` to a task."""
    if per_task < 1:
        raise ParameterError("lattice_parts_per_task", f"must be >= 1, got {per_task}")
    return [list(range(a, min(a + per_task, parts))) for a in range(0, parts, per_task)]
