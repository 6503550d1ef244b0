"""DISASSOCIATION (Loukides et al. 2014, Section 4, Fig. 6): HORPART, then
VERPART on every cluster, then refining; the chunks' subrecords are shuffled.

``disassociate(records, DisassociationConfig(k, m, ...))`` takes a long table
``patient_id, code`` and returns a ``DisassociationResult``.

Inputs the paper does not cover:

- An empty table gives an empty release.
- With fewer than ``k`` records (but at least one) no release keeps
  Guarantee 1: a cluster, or the whole dataset, holds fewer than ``k``
  records, so no set of codes can be held by ``k`` of them.  The release is
  then empty (no clusters): every record is suppressed, which Definition 1
  allows (no record can be singled out of an empty release), and
  ``metrics["suppressed_records"]`` says how many were withheld.
- Small clusters from HORPART are merged (see ``horpart.merge_small``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonymizers.disassociation.config import DisassociationConfig
from anonymizers.disassociation.horpart import horpart, merge_small
from anonymizers.disassociation.prepare import prepare
from anonymizers.disassociation.ragged import Part, concat
from anonymizers.disassociation.refine import refine
from anonymizers.disassociation.release import (Cluster, Disassociated, RecordChunk,
                                                SharedChunk)
from anonymizers.disassociation.verpart import Partition, verpart
from anonymizers.errors import ParameterError


@dataclass(frozen=True)
class DisassociationResult:
    """The release (``clusters``, ``shared_chunks``), its metrics and the
    config it was made with.  ``to_json()`` gives the CLI's JSON form and
    ``tables()`` flat DataFrames (see ``Disassociated.tables``).

    ``metrics``: n_records, n_codes (after Section 7.1 splitting), n_clusters,
    cluster_size_min/mean/max, merged_small_clusters (HORPART clusters below
    k), n_record_chunks, n_joint_clusters, n_shared_chunks,
    item_chunk_occurrence_share (share of (record, code) pairs whose code went
    to an item chunk: their supports are hidden), codes_with_exact_support
    (codes in no item chunk), suppressed_records (all of them when the input
    has fewer than k records).
    """

    release: Disassociated
    metrics: dict
    config: DisassociationConfig

    @property
    def clusters(self) -> tuple[Cluster, ...]:
        return self.release.clusters

    @property
    def shared_chunks(self) -> tuple[SharedChunk, ...]:
        return self.release.shared_chunks

    def to_json(self) -> dict:
        return self.release.to_json()

    def tables(self):
        return self.release.tables()


def disassociate(records, config: DisassociationConfig) -> DisassociationResult:
    """Disassociate ``records`` (DataFrame with columns patient_id, code)."""
    if not isinstance(config, DisassociationConfig):
        raise ParameterError("config", "must be a DisassociationConfig, got "
                             f"{type(config).__name__}")
    prep = prepare(records, config.utility_policy, config.sensitive_codes,
                   config.repeated_codes)
    rng = np.random.default_rng(config.seed)
    matrix = prep.records.matrix
    n = matrix.shape[0]
    if n < config.k:
        release = Disassociated(config.k, config.m, ())
        return DisassociationResult(release, _metrics(prep, [], [], [], 0, n), config)
    usable = ~prep.sensitive
    clusters = horpart(matrix, prep.constraint, usable, config.max_cluster_size)
    clusters, merged = merge_small(clusters, config.k)
    parts = [verpart(c, config.k, config.m, prep.constraint, prep.sensitive)
             for c in clusters]
    shared: list = []
    if config.refine:
        parts, shared = refine(clusters, parts, config.k, config.m, prep.constraint,
                               prep.sensitive, config.max_joint_clusters)
    release = _release(prep.records.codes, clusters, parts, shared, config, rng)
    return DisassociationResult(release, _metrics(prep, clusters, parts, shared, merged, 0),
                                config)


def _release(vocab: np.ndarray, clusters: list[Part], parts: list[Partition],
             shared: list, config: DisassociationConfig,
             rng: np.random.Generator) -> Disassociated:
    out = []
    for cluster, part in zip(clusters, parts):
        chunks = tuple(RecordChunk(tuple(vocab[c].tolist()), _subrecords(cluster, c, vocab, rng))
                       for c in part.chunks)
        out.append(Cluster(cluster.n, chunks, tuple(vocab[np.sort(part.item)].tolist())))
    shared_out = []
    for members, codes in shared:
        joined = concat([clusters[i] for i in members])
        shared_out.append(SharedChunk(tuple(members), tuple(vocab[codes].tolist()),
                                      _subrecords(joined, codes, vocab, rng)))
    return Disassociated(config.k, config.m, tuple(out), tuple(shared_out))


def _subrecords(part: Part, codes: np.ndarray, vocab: np.ndarray,
                rng: np.random.Generator) -> tuple[tuple[str, ...], ...]:
    """Every record of ``part`` projected on ``codes``, in a random order."""
    keep = np.zeros(len(vocab), dtype=bool)
    keep[codes] = True
    proj = part.only(keep)
    bounds = np.searchsorted(proj.pos, np.arange(part.n + 1))
    names = vocab[proj.codes].tolist()
    rows = [tuple(names[bounds[r]:bounds[r + 1]]) for r in range(part.n)]
    return tuple(rows[i] for i in rng.permutation(part.n))


def _metrics(prep, clusters, parts, shared, merged: int, suppressed: int) -> dict:
    sizes = np.array([c.n for c in clusters], dtype=np.int64)
    nnz = int(prep.records.matrix.nnz)
    in_item = sum(sum(p.support[c] for c in p.item.tolist()) for p in parts)
    item_codes = set()
    for p in parts:
        item_codes.update(p.item.tolist())
    joint = {members for members, _ in shared}
    return {
        "n_records": int(prep.records.n_records),
        "n_codes": int(prep.records.n_codes),
        "n_clusters": len(clusters),
        "cluster_size_min": int(sizes.min()) if len(sizes) else 0,
        "cluster_size_mean": float(sizes.mean()) if len(sizes) else 0.0,
        "cluster_size_max": int(sizes.max()) if len(sizes) else 0,
        "merged_small_clusters": int(merged),
        "n_record_chunks": sum(len(p.chunks) for p in parts),
        "n_joint_clusters": len(joint),
        "n_shared_chunks": len(shared),
        "item_chunk_occurrence_share": in_item / nnz if nnz and clusters else 0.0,
        "codes_with_exact_support": int(prep.records.n_codes - len(item_codes))
        if clusters else 0,
        "suppressed_records": int(suppressed),
    }
