"""The lattice search split into parts that can run apart (El Emam et al.
2012, appendix section 5; the search itself is ``lattice.search``).

The lattice is cut by the levels of one quasi-identifier, the *split QI*:
part l holds every node whose split-QI level is l.  Each part is itself a
product lattice (the split QI fixed, every other QI free), so ``search``
runs on it unchanged, and the release takes the best candidate over the
parts: least information loss, then fewest levels, then lattice index (the
order ``search`` ranks nodes in).  Under the monotonicity assumption the
search already makes, each part's search returns the part's least-loss
candidate, so the best over the parts is the least-loss candidate of the
whole lattice: the same node a single search finds.

Why a fixed cut rather than one adaptive search: the search decides each
node from the last one, which no static task graph can spread over workers,
while the parts are independent.  The cut depends only on the lattice
(``split_qi``), never on how many parts a worker takes, so the release does
not depend on how the parts are grouped into tasks; each node's random
stream is seeded by its levels, so a node's risk is the same in any task.

Cost: the parts evaluate more nodes than one search, since each descends
from its own top with no incumbent from the others.  On 20,000 generator
members (9 QIs, 19,200 nodes) one search evaluated 122 nodes and the five
DSFC parts 147 (1.2x); at 113,000 members 75 and 118 (1.6x); the same node
both times.  Cutting by other QIs cost 160-306 at 20,000, and by two QIs
228-298: DSFC, the finest claim QI, is the cut (``SPLIT_QI``); without it,
the used QI with the most levels.  ``max_evaluations`` bounds each part's
search.
"""

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
    """Index of the QI the lattice is cut by (module docstring)."""
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
