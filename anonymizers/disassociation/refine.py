"""Refining (Loukides et al. 2014, Section 4 "Refining", Fig. 10, Section 5): joint clusters formed
by best fit within refine windows, whose shared chunks take codes out of the item chunks.
Readings chosen and why: docs/methods/disassociation.md#disassociation-refine."""

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

    def add(self, index: int, part: Partition, item: list[int]) -> None:
        self.members.append(index)
        for c in item:
            self.total[c] = self.total.get(c, 0) + part.support[c]
            self.count[c] = self.count.get(c, 0) + 1
        for chunk in part.chunks:
            self.blocked.update(chunk.tolist())

    def refining_codes(self) -> list[int]:
        """Item codes of two or more members, support >= k, in no record
        chunk, on two records or more of some member
        (see docs/methods/disassociation.md#disassociation-refine)."""
        return sorted(c for c, t in self.total.items()
                      if self.count[c] >= 2 and t >= self.k and t > self.count[c]
                      and c not in self.blocked)


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
    """Best-fit joint clusters (see docs/methods/disassociation.md#disassociation-refine),
    as ``_Joint``s.

    The gain of joining joint cluster ``j``: the ``s - 1`` of the cluster's item
    codes that ``j`` already holds in item chunks and does not block, minus the
    ``s - 1`` mass of ``j``'s item codes that the cluster's record chunks would
    block.  Only joints sharing an item code can gain, so the look-ups go
    through each code's joints (sparse: most clusters gain nowhere).  Ties go
    to the oldest joint."""
    avail: dict[int, dict[int, int]] = {}  # code -> {joint: s - 1 mass there}
    blocked: list[set] = []
    members: list[list[int]] = []
    for i, part in enumerate(parts):
        chunk_codes = [c for ch in part.chunks for c in ch.tolist()]
        gain: dict[int, int] = {}
        for c in items[i]:
            extra = part.support[c] - 1
            if extra:
                for j in avail.get(c, ()):
                    gain[j] = gain.get(j, 0) + extra
        for j in list(gain):
            if max_joint is not None and len(members[j]) >= max_joint:
                del gain[j]
                continue
            gain[j] -= sum(avail.get(c, {}).get(j, 0) for c in chunk_codes)
        best = min((j for j, g in gain.items() if g > 0), key=lambda j: (-gain[j], j),
                   default=-1)
        if best < 0:
            best = len(members)
            members.append([])
            blocked.append(set())
        members[best].append(i)
        for c in chunk_codes:
            blocked[best].add(c)
            avail.get(c, {}).pop(best, None)
        for c in items[i]:
            if c not in blocked[best]:
                held = avail.setdefault(c, {})
                held[best] = held.get(best, 0) + part.support[c] - 1
    for group in members:
        joint = _Joint(k)
        for i in group:
            joint.add(i, parts[i], items[i])
        yield joint
