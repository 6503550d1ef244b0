"""Refining (Loukides et al. 2014, Section 4 "Refining", Fig. 10, Section 5):
joint clusters whose shared chunks take codes out of the item chunks.

The paper defines a joint cluster by a set ``T^s`` of refining codes "which
commonly appear in the item chunks of two or more clusters": the original
records of the joined clusters are projected onto ``T^s``, VERPART makes the
shared chunks from that projection, and the codes of ``T^s`` leave the item
chunks.  It adds that "large joint clusters can be built by combining smaller
joint clusters" but gives no procedure.  Our reading, documented here:

- Clusters are joined in HORPART order (neighbours are similar), greedily: a
  joint cluster takes the next cluster unless that lowers its *potential*,
  the number of item-chunk occurrences of codes that none of its record
  chunks holds (those are the occurrences refining may move), and while it
  joins fewer than ``max_joint_clusters`` clusters.  (Growing only while the
  number of occurrences actually moved grows stops too early: a code needs
  ``k`` occurrences before it moves, so the first clusters that bring it add
  nothing.)  Each cluster belongs to at most one joint cluster (joint
  clusters are never nested), so a shared chunk's cluster list is its joint
  cluster.
- A code is a refining code of a joint cluster when it is in the item chunks
  of at least two of its clusters, its total support over them is at least
  ``k`` (Section 5: "2 + 2 = 4 > k = 3"), it is in none of their record chunks
  (a record would otherwise receive the code from two chunks), and it is not
  sensitive (Section 7.2 keeps sensitive codes in item chunks).
- VERPART then runs on the projection of the joined records onto the
  refining codes; each of its record chunks becomes a shared chunk.  A code
  VERPART would leave in its item chunk (none, given the support rule) stays
  in the item chunks of its clusters.

Guarantee 1 still holds: if record ``r`` of cluster ``P`` contains ``S``, the
part of ``S`` in each record chunk of ``P`` and in each shared chunk is held by
``r``'s subrecord, hence by at least ``k`` subrecords of that k^m-anonymous
chunk, and ``|P| >= k``; a reconstruction can put all those subrecords on the
same ``k`` records of the joint cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from anonymizers.disassociation.ragged import Part, concat
from anonymizers.disassociation.verpart import Partition, verpart


@dataclass
class _Joint:
    """Running state of a joint cluster under construction."""

    k: int
    members: list[int] = field(default_factory=list)
    total: dict = field(default_factory=dict)
    count: dict = field(default_factory=dict)
    blocked: set = field(default_factory=set)

    def potential(self, code: int, total: int | None = None) -> int:
        """Item-chunk occurrences of ``code`` refining may move (0 if blocked)."""
        if code in self.blocked:
            return 0
        return self.total.get(code, 0) if total is None else total

    def delta(self, part: Partition, item: list[int]) -> int:
        """Change of the potential if the cluster with ``part`` joined."""
        change = 0
        for c in item:
            before = self.potential(c)
            change += self.potential(c, self.total.get(c, 0) + part.support[c]) - before
        for chunk in part.chunks:
            for c in chunk.tolist():
                change -= self.potential(c)
        return change

    def add(self, index: int, part: Partition, item: list[int]) -> None:
        self.members.append(index)
        for c in item:
            self.total[c] = self.total.get(c, 0) + part.support[c]
            self.count[c] = self.count.get(c, 0) + 1
        for chunk in part.chunks:
            self.blocked.update(chunk.tolist())

    def refining_codes(self) -> list[int]:
        """Item codes of two or more members, support >= k, in no record chunk."""
        return sorted(c for c, t in self.total.items()
                      if self.count[c] >= 2 and t >= self.k and c not in self.blocked)


def refine(clusters: list[Part], parts: list[Partition],
           k: int, m: int, constraint: np.ndarray, sensitive: np.ndarray,
           max_joint: int | None) -> tuple[list[Partition], list[tuple[tuple, np.ndarray]]]:
    """Join clusters and build shared chunks.  Returns the partitions with
    refined codes removed from their item chunks, and the shared chunks as
    (cluster indices, code indices) pairs."""
    items = [[c for c in p.item.tolist() if not sensitive[c]] for p in parts]
    shared: list[tuple[tuple, np.ndarray]] = []
    parts = list(parts)
    for joint in _groups(parts, items, k, max_joint):
        codes = joint.refining_codes()
        if len(joint.members) < 2 or not codes:
            continue
        keep = np.zeros(len(constraint), dtype=bool)
        keep[codes] = True
        joined = concat([clusters[i] for i in joint.members]).only(keep)
        result = verpart(joined, k, m, constraint, sensitive)
        moved = set()
        for chunk in result.chunks:
            shared.append((tuple(joint.members), chunk))
            moved.update(chunk.tolist())
        for i in joint.members:
            p = parts[i]
            parts[i] = Partition(p.chunks, np.array([c for c in p.item.tolist()
                                                     if c not in moved], dtype=np.int64),
                                 p.support)
    return parts, shared


def _groups(parts: list[Partition], items: list[list[int]], k: int, max_joint: int | None):
    """Greedy joint clusters over consecutive clusters (see module docstring)."""
    joint = None
    for i, part in enumerate(parts):
        full = joint is not None and max_joint is not None and len(joint.members) >= max_joint
        if joint is not None and not full and joint.delta(part, items[i]) >= 0:
            joint.add(i, part, items[i])
            continue
        if joint is not None:
            yield joint
        joint = _Joint(k)
        joint.add(i, part, items[i])
    if joint is not None:
        yield joint
