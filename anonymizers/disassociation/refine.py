"""Refining (Loukides et al. 2014, Section 4 "Refining", Fig. 10, Section 5):
joint clusters whose shared chunks take codes out of the item chunks.

The paper defines a joint cluster by a set ``T^s`` of refining codes "which
commonly appear in the item chunks of two or more clusters": the original
records of the joined clusters are projected onto ``T^s``, VERPART makes the
shared chunks from that projection, and the codes of ``T^s`` leave the item
chunks.  It adds that "large joint clusters can be built by combining smaller
joint clusters" but gives no procedure.  Our reading, documented here:

- Joint clusters are formed inside a refine window by best fit: clusters are
  taken in HORPART order and each joins the open joint cluster where it
  *gains* most, or opens a new one when no joint cluster gains.  The gain
  counts hidden occurrences refining could reveal: over the cluster's item
  codes that the joint cluster already holds in an item chunk and does not
  block (a code is blocked when a record chunk of a member holds it), the
  support beyond one record, ``s - 1``; minus what the cluster's own record
  chunks would block there.  Why ``s - 1``
  and not ``s``: a recipient can only take an item-chunk code to be on one
  record of its cluster (``reconstruct``'s default), so refining reveals a
  count only where the code is on two records or more; joining clusters whose
  item codes are on one record each reveals no count and scatters their
  codes' associations over the joint cluster (on MEPS 2005 this reading keeps
  frequent pairs closer: see benchmarks/disassociation.md).  Clusters are
  never nested, so a shared chunk's cluster list is its joint cluster.
- A code is a refining code of a joint cluster when it is in the item chunks
  of at least two of its clusters, its total support over them is at least
  ``k`` (Section 5: "2 + 2 = 4 > k = 3"), it is in none of their record chunks
  (a record would otherwise receive the code from two chunks), it is not
  sensitive (Section 7.2 keeps sensitive codes in item chunks), and at least
  one of those clusters holds it on two records or more (its total exceeds
  the number of item chunks holding it).  The last condition is our reading:
  the paper calls ``T^s`` codes "which commonly appear in the item chunks of
  two or more clusters" and does not say every such code must be refined.
  A code on one record of each cluster keeps its exact count without
  refining (``reconstruct`` puts an item-chunk code on one record), so
  refining it reveals nothing and only moves it from its cluster's records
  to any record of the joint cluster, away from the codes it co-occurs with:
  on MEPS 2005 at k = 5 the condition leaves single codes' counts unchanged
  and lowers W2 ARE 0.31 -> 0.29; with ``linking``'s length-weighted
  assignment it lifts ICD-9 sections within 2.5% from 81.2% (mean of 14
  draws) to 82.1% (12 draws; benchmarks/disassociation.md).
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

    def add(self, index: int, part: Partition, item: list[int]) -> None:
        self.members.append(index)
        for c in item:
            self.total[c] = self.total.get(c, 0) + part.support[c]
            self.count[c] = self.count.get(c, 0) + 1
        for chunk in part.chunks:
            self.blocked.update(chunk.tolist())

    def refining_codes(self) -> list[int]:
        """Item codes of two or more members, support >= k, in no record
        chunk, on two records or more of some member (see the module docstring)."""
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
    """Best-fit joint clusters (see the module docstring), as ``_Joint``s.

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
