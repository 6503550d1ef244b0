"""Draw one dataset ``D'`` from a disassociated release as a recipient would (Loukides et al. 2014,
Section 3.2, Fig. 5): records linked by ``linking``, an item-chunk code on one record by default.
Readings chosen and why: docs/methods/disassociation.md#disassociation-reconstruct."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.disassociation import linking as lk
from anonymizers.disassociation.release import Cluster, Disassociated
from anonymizers.errors import ParameterError
from anonymizers.pseudonyms import fresh

ITEM_SUPPORT = ("one", "below_k", "cluster")
DEFAULT_ITEM_SUPPORT = "one"
LINKING = ("association", "random")
DEFAULT_LINKING = "association"


def reconstruct(release: Disassociated, seed: int | None = None,
                item_support: str = DEFAULT_ITEM_SUPPORT,
                linking: str = DEFAULT_LINKING) -> pd.DataFrame:
    """A long table ``patient_id, code`` drawn from ``release`` with the
    generator seeded by ``seed``."""
    if item_support not in ITEM_SUPPORT:
        raise ParameterError("item_support", f"must be one of {ITEM_SUPPORT}, "
                             f"got {item_support!r}")
    if linking not in LINKING:
        raise ParameterError("linking", f"must be one of {LINKING}, got {linking!r}")
    rng = np.random.default_rng(seed)
    placed = _Placed(release, linking == "association")
    for ci, cluster in enumerate(release.clusters):
        cap = {"cluster": cluster.size, "one": 1}.get(item_support,
                                                      min(cluster.size, release.k - 1))
        placed.cluster(ci, cluster, max(cap, 1), rng)
    for shared in release.shared_chunks:
        members = np.concatenate([placed.records_of(i) for i in shared.clusters]
                                 or [np.zeros(0, dtype=np.int64)])
        placed.subrecords(shared.subrecords, members, rng, joint=shared.clusters)
    out = placed.table(rng)
    out.attrs["item_support"] = item_support
    out.attrs["linking"] = linking
    return out


class _Placed:
    """The (record, code) pairs placed so far, and the association that
    links the next chunk to them (``None``: at random)."""

    def __init__(self, release: Disassociated, by_association: bool):
        self.vocab = lk.vocabulary(release)
        self.assoc = lk.association(release, self.vocab) if by_association else None
        self.assoc_by_code = self.assoc.tocsc() if by_association else None
        self.starts = np.cumsum([0] + [c.size for c in release.clusters])
        self.count = np.zeros(int(self.starts[-1]), dtype=np.int64)  # codes placed per record
        self.rec: list[np.ndarray] = []
        self.code: list[np.ndarray] = []
        self.joint: dict[tuple, _Incidence] = {}

    def records_of(self, ci: int) -> np.ndarray:
        return np.arange(self.starts[ci], self.starts[ci + 1])

    def cluster(self, ci: int, cluster: Cluster, count: int, rng) -> None:
        """Place the cluster's record chunks and its item codes, each on a
        number of records drawn uniformly in ``1 .. count``."""
        records, since = self.records_of(ci), len(self.rec)
        for h, chunk in enumerate(cluster.record_chunks):
            if h == 0:  # nothing to link to yet: every order is as good
                self.add(np.repeat(records[rng.permutation(cluster.size)],
                                   [len(s) for s in chunk.subrecords]),
                         [c for s in chunk.subrecords for c in s])
            else:
                self.subrecords(chunk.subrecords, records, rng, since)
        if not cluster.item_chunk:
            return
        items = np.array([self.vocab[c] for c in cluster.item_chunk], dtype=np.int64)
        counts = rng.integers(1, count + 1, size=len(items))  # 1 when count is 1
        if self.assoc is not None:
            ctx = self.context(records, self.assoc_by_code[:, items], since)
            self.add(*lk.urn(records, self.count[records], ctx, counts, items, rng),
                     indexed=True)
            return
        who = lk.best_records(np.zeros((cluster.size, len(items))), rng,
                              min(count, cluster.size), 1.0)
        take = np.arange(who.shape[0])[:, None] < counts[None, :]
        self.add(records[who[take]], np.broadcast_to(items, who.shape)[take], indexed=True)

    def subrecords(self, subrecords, members: np.ndarray, rng, since: int = 0,
                   joint: tuple | None = None) -> None:
        """One subrecord per record of ``members`` (whose pairs placed so far
        are those added from index ``since`` on, or, for the shared chunks of
        the ``joint`` cluster, all of them)."""
        if self.assoc is None:
            self.add(np.repeat(rng.permutation(members), [len(s) for s in subrecords]),
                     [c for s in subrecords for c in s])
            return
        full = [s for s in subrecords if s]
        if not full:
            return
        if not lk.exact_feasible(len(members), len(full)):
            self._greedy(full, members, rng, since, joint)
            return
        cols = np.array([self.vocab[c] for s in full for c in s], dtype=np.int64)
        which = np.repeat(np.arange(len(full)), [len(s) for s in full])
        chosen = sp.csr_matrix((np.ones(len(cols)), (cols, which)),
                               shape=(len(self.vocab), len(full)))
        ctx = self.context(members, self.assoc @ chosen, since, joint)
        to = lk.best_assignment(ctx, rng, self.count[members], np.array([len(s) for s in full]))
        self.add(members[to][which], cols, indexed=True)

    def _greedy(self, full, members: np.ndarray, rng, since: int, joint) -> None:
        """``subrecords`` where the exact assignment is out of reach
        (``lk.exact_feasible``): equal subrecords placed as one class by
        ``lk.greedy_assignment``."""
        index: dict[tuple, int] = {}
        inverse = np.fromiter((index.setdefault(s, len(index)) for s in full),
                              dtype=np.int64, count=len(full))
        kinds = list(index)
        codes = np.array(sorted({self.vocab[c] for s in kinds for c in s}), dtype=np.int64)
        local = {int(c): i for i, c in enumerate(codes)}
        rows = np.array([local[self.vocab[c]] for s in kinds for c in s], dtype=np.int64)
        which = np.repeat(np.arange(len(kinds)), [len(s) for s in kinds])
        classes = sp.csc_matrix((np.ones(len(rows)), (rows, which)),
                                shape=(len(codes), len(kinds)))
        u = self.context(members, self.assoc_by_code[:, codes], since, joint)
        per_class = lk.greedy_assignment(u, classes, np.bincount(inverse, minlength=len(kinds)),
                                         self.count[members],
                                         np.array([len(s) for s in kinds]), rng)
        to = np.empty(len(full), dtype=np.int64)
        to[np.argsort(inverse, kind="stable")] = np.concatenate(per_class)
        self.add(np.repeat(members[to], [len(s) for s in full]),
                 [c for s in full for c in s])

    def context(self, records: np.ndarray, weights, since: int,
                joint: tuple | None = None) -> np.ndarray:
        """records x columns: summed association of the codes each of
        ``records`` holds, among the pairs added from index ``since`` on (all
        pairs for the ``joint`` cluster's records)."""
        if joint is not None:
            if joint not in self.joint:
                self.joint[joint] = _Incidence(records, len(self.vocab))
            return np.asarray((self.joint[joint].read(self.rec, self.code) @ weights).todense())
        if len(self.rec) <= since:
            return np.zeros((len(records), weights.shape[1]))
        if records[-1] - records[0] + 1 != len(records):
            raise ValueError("records of several clusters need their joint cluster")
        r, c = np.concatenate(self.rec[since:]), np.concatenate(self.code[since:])
        at = r - records[0]
        keep = (at >= 0) & (at < len(records))
        held = sp.coo_matrix((np.ones(int(keep.sum())), (at[keep], c[keep])),
                             shape=(len(records), len(self.vocab))).tocsr()
        return np.asarray((held @ weights).todense())

    def add(self, rows: np.ndarray, codes, indexed: bool = False) -> None:
        cols = np.asarray(codes, dtype=np.int64) if indexed else \
            np.fromiter((self.vocab[c] for c in codes), dtype=np.int64, count=len(codes))
        self.rec.append(np.asarray(rows, dtype=np.int64))
        self.code.append(cols)
        np.add.at(self.count, self.rec[-1], 1)

    def table(self, rng) -> pd.DataFrame:
        names = fresh(int(self.starts[-1]), rng)
        rows = np.concatenate(self.rec) if self.rec else np.zeros(0, dtype=np.int64)
        cols = np.concatenate(self.code) if self.code else np.zeros(0, dtype=np.int64)
        inverse = np.array(sorted(self.vocab, key=self.vocab.get), dtype=object)
        out = pd.DataFrame({"patient_id": names[rows] if len(rows) else np.array([], dtype=object),
                            "code": inverse[cols] if len(cols) else np.array([], dtype=object)})
        out = out.drop_duplicates().sort_values(["patient_id", "code"], kind="stable")
        return out.reset_index(drop=True)


class _Incidence:
    """records x codes: how often each code was placed on each of a joint
    cluster's records, brought up to date from the pairs added since it was
    last read (a joint cluster's shared chunks read it one after another;
    rebuilding it from every pair each time was most of the work)."""

    def __init__(self, records: np.ndarray, n_codes: int):
        self.row_of = np.argsort(records, kind="stable")  # rows by record, sorted
        self.sorted = records[self.row_of]
        self.matrix = sp.csr_matrix((len(records), n_codes))
        self.seen = 0

    def read(self, rec: list[np.ndarray], code: list[np.ndarray]) -> sp.csr_matrix:
        if self.seen < len(rec):
            r = np.concatenate(rec[self.seen:])
            i = np.minimum(np.searchsorted(self.sorted, r), len(self.sorted) - 1)
            keep = self.sorted[i] == r
            at = self.row_of[i]
            new = sp.coo_matrix((np.ones(int(keep.sum())),
                                 (at[keep], np.concatenate(code[self.seen:])[keep])),
                                shape=self.matrix.shape).tocsr()
            self.matrix = self.matrix + new
            self.seen = len(rec)
        return self.matrix
