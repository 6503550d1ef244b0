"""DISASSOCIATION (Loukides et al. 2014, Section 4, Fig. 6): HORPART, then VERPART on every
cluster, then refining: ``disassociate(records, DisassociationConfig(k, m, ...))``.
Readings chosen and why: docs/methods/disassociation.md#disassociation-algorithm."""

from __future__ import annotations

from dataclasses import dataclass

from anonymizers.disassociation.batches import combine, plan, run_batch
from anonymizers.disassociation.config import DisassociationConfig
from anonymizers.disassociation.release import Cluster, Disassociated, SharedChunk
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
    (codes in no item chunk), suppressed_records (always 0: inputs of fewer
    than k records are refused, never suppressed).
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
    """Disassociate ``records`` (DataFrame with columns patient_id, code): the
    plan and one batch holding every cluster (``batches`` splits the work)."""
    if not isinstance(config, DisassociationConfig):
        raise ParameterError("config", "must be a DisassociationConfig, got "
                             f"{type(config).__name__}")
    p = plan(records, config)
    fragment = run_batch(records, p.rows, config, p.n_clusters)
    release, metrics = combine(p, [fragment], config)
    return DisassociationResult(release, metrics, config)
