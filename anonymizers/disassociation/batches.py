"""DISASSOCIATION in batches of HORPART clusters (Section 4; ``plan``, ``run_batch``, ``combine``):
one Airflow task per batch, the same release whatever the batching; chunks sorted (Section 3.2).
Readings chosen and why: docs/methods/disassociation.md#disassociation-batches."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers.disassociation.config import DisassociationConfig
from anonymizers.disassociation.horpart import horpart, merge_small
from anonymizers.disassociation.prepare import (
    Prepared,
    TooFewRecords,
    prepare,
    prepare_batches,
)
from anonymizers.disassociation.ragged import Part, concat, gather
from anonymizers.disassociation.refine import refine
from anonymizers.disassociation.release import (
    Cluster,
    Disassociated,
    RecordChunk,
    SharedChunk,
)
from anonymizers.disassociation.verpart import verpart
from anonymizers.errors import ParameterError

PLAN_COLUMNS = ["patient_id", "cluster", "position"]
# seconds per record over seconds per (pairs^2 / records), fitted at 113k (Plan.work)
WORK_PER_RECORD = 148.0


@dataclass(frozen=True)
class Plan:
    """HORPART's clusters: ``rows`` has one row per record (patient_id,
    cluster, position in the cluster), sorted by cluster then position;
    ``codes[c]`` is the number of (record, code) pairs of cluster ``c`` and
    ``sizes[c]`` its number of records."""

    rows: pd.DataFrame
    n_clusters: int
    metrics: dict
    codes: np.ndarray | None = None
    sizes: np.ndarray | None = None

    def work(self) -> np.ndarray:
        """Estimated VERPART and refining time of each cluster: a part per
        record, and a part growing with pairs x codes per record (the chunk
        growth and the code-pair counts of a cluster).  Fitted over the 24
        refine windows at 113,000 members: correlation 0.97 with the time,
        against 0.92 for the pairs alone, whose balance left the first of six
        batches twice the time of the last in Airflow.  Pairs alone without
        sizes."""
        if self.codes is None:
            return np.ones(self.n_clusters)
        pairs = np.asarray(self.codes, dtype=np.float64)
        if self.sizes is None:
            return pairs
        records = np.maximum(np.asarray(self.sizes, dtype=np.float64), 1.0)
        return WORK_PER_RECORD * records + pairs * pairs / records

    def batches(self, batch_size: int, window: int | None) -> list[tuple[int, int]]:
        """``[first, stop)`` cluster ranges of whole refine windows.

        There are at most as many as ranges of ``batch_size`` clusters
        (rounded up to whole windows) would make (fewer when two cuts would
        fall on the same window boundary), and the cuts fall where every batch holds
        about the same ``work()``: HORPART puts the records with the most
        codes first, so equal cluster counts gave a first batch nine times
        the work of the last, and one task held up the others.
        """
        if batch_size < 1:
            raise ParameterError("batch_size", f"must be at least 1, got {batch_size}")
        if window is None:  # one window: the whole dataset
            window = max(self.n_clusters, 1)
        if window < 1:
            raise ParameterError("refine_window", f"must be at least 1, got {window}")
        if self.n_clusters == 0:
            return []
        n_windows = -(-self.n_clusters // window)
        n_batches = -(-n_windows // max(1, -(-batch_size // window)))
        per_window = np.add.reduceat(self.work(), np.arange(0, self.n_clusters, window))
        cuts = _even_cuts(np.cumsum(per_window), n_batches)
        bounds = [0, *(c * window for c in cuts), self.n_clusters]
        return [(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


def _even_cuts(cumulative: np.ndarray, n_parts: int) -> list[int]:
    """Window indices (strictly increasing, inside ``1 .. len - 1``) that cut
    ``cumulative`` into at most ``n_parts`` runs of about equal sum: each cut
    is the window boundary nearest to its share of the total."""
    n = len(cumulative)
    if n_parts <= 1 or n <= 1:
        return []
    targets = cumulative[-1] * np.arange(1, n_parts) / n_parts
    after = np.searchsorted(cumulative, targets)  # first window reaching the target
    before = np.maximum(after - 1, 0)
    nearer = np.where(np.abs(cumulative[before] - targets) <= np.abs(cumulative[after] - targets),
                      before, after)
    return sorted({int(i) + 1 for i in nearer if int(i) + 1 < n})


@dataclass(frozen=True)
class Fragment:
    """A batch's release (its clusters ``first .. first + len - 1``) and the
    figures ``combine`` sums."""

    first: int
    release: Disassociated
    figures: dict


def plan(records: pd.DataFrame, config: DisassociationConfig) -> Plan:
    """Prepare and HORPART all records (see
    docs/methods/disassociation.md#disassociation-batches)."""
    return _plan(prepare(records, config.utility_policy, config.sensitive_codes,
                         config.repeated_codes), config)


def plan_batches(batches: Iterable[pd.DataFrame], config: DisassociationConfig,
                 source: str = "records") -> Plan:
    """``plan`` of the long table the row batches make up (in order), holding
    one batch at a time plus the encoded records: the same Plan for any split
    of the rows."""
    return _plan(prepare_batches(batches, config.utility_policy, config.sensitive_codes,
                                 config.repeated_codes, source), config, source)


def _plan(prep: Prepared, config: DisassociationConfig, source: str = "records") -> Plan:
    matrix = prep.records.matrix
    n = matrix.shape[0]
    figures = {"n_records": int(n), "n_codes": int(prep.records.n_codes),
               "nnz": int(matrix.nnz), "merged_small_clusters": 0}
    if n < config.k:
        raise TooFewRecords(source, int(n), config.k)
    clusters = horpart(matrix, prep.constraint, ~prep.sensitive, config.max_cluster_size)
    clusters, merged = merge_small(clusters, config.k)
    sizes = np.array([c.n for c in clusters], dtype=np.int64)
    rows = pd.DataFrame({
        "patient_id": prep.records.patients[np.concatenate([c.rows for c in clusters])],
        "cluster": np.repeat(np.arange(len(clusters)), sizes),
        "position": np.concatenate([np.arange(s) for s in sizes])})
    per_cluster = np.array([len(c.codes) for c in clusters], dtype=np.int64)
    return Plan(rows, len(clusters), {**figures, "merged_small_clusters": int(merged)},
                per_cluster, sizes)


def run_batch(records: pd.DataFrame, plan_rows: pd.DataFrame,
              config: DisassociationConfig, n_clusters: int) -> Fragment:
    """VERPART and refining for the clusters of ``plan_rows``, a slice of
    ``Plan.rows`` made of whole refine windows (the last may end at the
    plan's ``n_clusters``); ``records`` must hold the rows of those patients
    (it may hold others: they are ignored)."""
    plan_rows = plan_rows.sort_values(["cluster", "position"], ignore_index=True)
    if plan_rows.empty:
        return Fragment(0, Disassociated(config.k, config.m, ()), _figures([], [], [], {}))
    first, stop = int(plan_rows["cluster"].iloc[0]), int(plan_rows["cluster"].iloc[-1]) + 1
    w = window_of(config, n_clusters)
    if first % w or (stop % w and stop != n_clusters):
        raise ParameterError("plan_rows", f"a batch must be whole refine windows of {w} "
                             f"clusters; got clusters {first}..{stop - 1} of {n_clusters}")
    mine = records[records["patient_id"].isin(plan_rows["patient_id"])]
    prep = prepare(mine, config.utility_policy, config.sensitive_codes, config.repeated_codes)
    where = pd.Index(prep.records.patients).get_indexer(plan_rows["patient_id"])
    if (where < 0).any():
        raise ParameterError("records", "the records lack patients of the batch's plan")
    local = plan_rows["cluster"].to_numpy() - first
    bounds = np.searchsorted(local, np.arange(local.max() + 2))
    clusters = [gather(prep.records.matrix, where[bounds[i]:bounds[i + 1]])
                for i in range(len(bounds) - 1)]
    parts = [verpart(c, config.k, config.m, prep.constraint, prep.sensitive) for c in clusters]
    shared: list = []
    if config.refine:
        parts, shared = _refine_windows(clusters, parts, w, config, prep)
    release = _release(prep.records.codes, clusters, parts, shared, config)
    return Fragment(first, release, _figures(clusters, parts, shared, prep))


def window_of(config: DisassociationConfig, n_clusters: int) -> int:
    """Clusters per refine window: ``config.refine_window``, or all of them."""
    return config.refine_window or max(int(n_clusters), 1)


def _refine_windows(clusters, parts, w: int, config, prep):
    """Refining (Fig. 10) inside each refine window (``w`` clusters) of the batch."""
    out_parts, out_shared = [], []
    for lo in range(0, len(clusters), w):
        p, s = refine(clusters[lo:lo + w], parts[lo:lo + w], config.k, config.m,
                      prep.constraint, prep.sensitive, config.max_joint_clusters)
        out_parts += p
        out_shared += [(tuple(i + lo for i in members), codes) for members, codes in s]
    return out_parts, out_shared


def _release(vocab, clusters: list[Part], parts, shared, config) -> Disassociated:
    """The fragment; shared chunks name clusters by their index in the fragment."""
    out = []
    for cluster, part in zip(clusters, parts):
        chunks = tuple(RecordChunk(tuple(vocab[c].tolist()), _subrecords(cluster, c, vocab))
                       for c in part.chunks)
        out.append(Cluster(cluster.n, chunks, tuple(vocab[np.sort(part.item)].tolist())))
    shared_out = []
    for members, codes in shared:
        joined = concat([clusters[i] for i in members])
        shared_out.append(SharedChunk(tuple(members), tuple(vocab[codes].tolist()),
                                      _subrecords(joined, codes, vocab)))
    return Disassociated(config.k, config.m, tuple(out), tuple(shared_out))


def _subrecords(part: Part, codes: np.ndarray, vocab: np.ndarray) -> tuple[tuple[str, ...], ...]:
    """Every record of ``part`` projected on ``codes``, in sorted order (see
    docs/methods/disassociation.md#disassociation-batches:
    the order must not tell records apart)."""
    keep = np.zeros(len(vocab), dtype=bool)
    keep[codes] = True
    proj = part.only(keep)
    bounds = np.searchsorted(proj.pos, np.arange(part.n + 1))
    names = vocab[proj.codes].tolist()
    return tuple(sorted(tuple(names[bounds[r]:bounds[r + 1]]) for r in range(part.n)))


def _figures(clusters, parts, shared, prep) -> dict:
    """What ``combine`` sums over fragments (item codes by name: vocabularies differ)."""
    item_codes = sorted({str(prep.records.codes[c]) for p in parts for c in p.item.tolist()})
    return {"n_clusters": len(clusters),
            "sizes": [int(c.n) for c in clusters],
            "n_record_chunks": sum(len(p.chunks) for p in parts),
            "n_joint_clusters": len({members for members, _ in shared}),
            "n_shared_chunks": len(shared),
            "item_occurrences": int(sum(sum(p.support[c] for c in p.item.tolist())
                                        for p in parts)),
            "item_codes": item_codes}


def combine(plan_: Plan, fragments: list[Fragment], config: DisassociationConfig):
    """The release of all fragments (in cluster order) and its metrics."""
    fragments = sorted(fragments, key=lambda f: f.first)
    clusters, shared, offset = [], [], 0
    for f in fragments:
        _expect_next(f, offset)
        clusters += f.release.clusters
        shared += [SharedChunk(tuple(c + offset for c in s.clusters), s.codes, s.subrecords)
                   for s in f.release.shared_chunks]
        offset += len(f.release.clusters)
    _expect_all(offset, plan_)
    release = Disassociated(config.k, config.m, tuple(clusters), tuple(shared))
    return release, _metrics(plan_, [f.figures for f in fragments])


class Stitcher:
    """``combine`` one fragment at a time, for callers that write the release
    tables batch by batch and never hold the whole release: ``add`` each
    fragment in cluster order and get its tables with release-wide ids (the
    rows ``combine(...)[0].tables()`` has for those clusters), then call
    ``metrics``."""

    def __init__(self, plan_: Plan):
        self.plan, self.clusters, self.shared, self.figures = plan_, 0, 0, []

    def add(self, fragment: Fragment) -> dict[str, pd.DataFrame]:
        _expect_next(fragment, self.clusters)
        tables = fragment.release.tables()
        for name in ("clusters", "record_chunks", "item_chunks", "shared_chunk_clusters"):
            tables[name]["cluster_id"] += self.clusters
        for name in ("shared_chunks", "shared_chunk_clusters"):
            tables[name]["shared_id"] += self.shared
        self.clusters += len(fragment.release.clusters)
        self.shared += len(fragment.release.shared_chunks)
        self.figures.append(fragment.figures)
        return tables

    def metrics(self) -> dict:
        _expect_all(self.clusters, self.plan)
        return _metrics(self.plan, self.figures)


def _expect_next(fragment: Fragment, offset: int) -> None:
    if fragment.first != offset:
        raise ParameterError("fragments", f"expected the batch starting at cluster "
                             f"{offset}, got one starting at {fragment.first}")


def _expect_all(n_clusters: int, plan_: Plan) -> None:
    if n_clusters != plan_.n_clusters:
        raise ParameterError("fragments", f"the batches hold {n_clusters} clusters, the plan "
                             f"{plan_.n_clusters}")


def _metrics(plan_: Plan, figures: list[dict]) -> dict:
    m = plan_.metrics
    sizes = np.array([s for f in figures for s in f["sizes"]], dtype=np.int64)
    item_codes = set().union(*(f["item_codes"] for f in figures)) if figures else set()
    released = len(sizes) > 0
    return {
        "n_records": m["n_records"], "n_codes": m["n_codes"], "n_clusters": len(sizes),
        "cluster_size_min": int(sizes.min()) if released else 0,
        "cluster_size_mean": float(sizes.mean()) if released else 0.0,
        "cluster_size_max": int(sizes.max()) if released else 0,
        "merged_small_clusters": m["merged_small_clusters"],
        **{key: sum(f[key] for f in figures)
           for key in ("n_record_chunks", "n_joint_clusters", "n_shared_chunks")},
        "item_chunk_occurrence_share":
            sum(f["item_occurrences"] for f in figures) / m["nnz"]
            if m["nnz"] and released else 0.0,
        "codes_with_exact_support": m["n_codes"] - len(item_codes) if released else 0,
        "suppressed_records": 0,  # inputs of fewer than k records are refused instead
    }
