"""From clusters to the released table and its figures.

Every member of a cluster is released with the cluster's anonymized
trajectory under a fresh pseudonym; rows are sorted by pseudonym (a random
order), so the release order says nothing about the input order or the
clusters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonymizers import pseudonyms
from anonymizers.longitudinal import hierarchies as hz
from anonymizers.longitudinal import metrics as mx
from anonymizers.longitudinal.alignment import Trees
from anonymizers.longitudinal.loss import dataset_lm, pair_loss
from anonymizers.longitudinal.trajectories import Trajectories

COLUMNS = ["patient_id", "position", "code", "age"]


@dataclass(frozen=True)
class Release:
    records: pd.DataFrame
    patients: np.ndarray
    pseudonym_map: pd.DataFrame
    metrics: dict
    age_outside: np.ndarray


def assemble(traj: Trajectories, trees: Trees, icd: np.ndarray, age: np.ndarray,
             clusters: list, rng: np.random.Generator) -> Release:
    n = traj.n
    names = pseudonyms.fresh(n, rng, prefix="P")
    rep_icd, rep_age, rep_group, rel_icd, rel_age = _released_values(traj, clusters, len(icd))
    cluster_of = np.empty(n, dtype=np.int64)
    for c, cl in enumerate(clusters):
        cluster_of[cl.members] = c
    records = _records(names, cluster_of, rep_icd, rep_age, rep_group, trees)
    order = np.argsort(names, kind="stable")
    pmap = pd.DataFrame({"pseudonym": names[order],
                         "patient_id": traj.patients[order]}).reset_index(drop=True)
    sizes = np.array([len(cl.members) for cl in clusters], dtype=np.int64)
    figures = _figures(traj, trees, icd, age, rel_icd, rel_age, rep_icd, rep_age, rep_group, sizes)
    figures["released_pairs"] = int(len(records))
    return Release(records, names[order], pmap, figures, age == 0)


def _released_values(traj: Trajectories, clusters: list, n_pairs: int):
    """Representative pairs (flat, with their cluster) and, for every
    original pair, the node it is released as (-1: suppressed)."""
    rel_icd = np.full(n_pairs, -1, dtype=np.int64)
    rel_age = np.full(n_pairs, -1, dtype=np.int64)
    reps_i, reps_a, reps_g = [], [], []
    for c, cl in enumerate(clusters):
        rep = cl.trajectory
        reps_i.append(rep.icd)
        reps_a.append(rep.age)
        reps_g.append(np.full(len(rep), c, dtype=np.int64))
        for t, pos in zip(cl.members, cl.positions):
            span = slice(traj.offsets[t], traj.offsets[t + 1])
            kept = pos >= 0
            rel_icd[span] = np.where(kept, rep.icd[np.where(kept, pos, 0)] if len(rep) else -1, -1)
            rel_age[span] = np.where(kept, rep.age[np.where(kept, pos, 0)] if len(rep) else -1, -1)
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
    return cat(reps_i), cat(reps_a), cat(reps_g), rel_icd, rel_age


def _records(names, cluster_of, rep_icd, rep_age, rep_group, trees: Trees) -> pd.DataFrame:
    """One row per released pair, patients in pseudonym order."""
    n_clusters = len(cluster_of) and int(cluster_of.max()) + 1
    rep_len = np.bincount(rep_group, minlength=n_clusters)
    rep_start = np.concatenate([[0], np.cumsum(rep_len)])[:-1]
    patients = np.argsort(names, kind="stable")
    lengths = rep_len[cluster_of[patients]]
    owner = np.repeat(patients, lengths)
    position = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    flat = (rep_start[cluster_of[owner]] + position).astype(np.int64)
    icd_labels = np.array(trees.icd.label_of(np.arange(trees.icd.n_nodes)) + [""], dtype=object)
    age_labels = np.array(trees.age.label_of(np.arange(trees.age.n_nodes)) + [""], dtype=object)
    return pd.DataFrame({"patient_id": names[owner].astype(object),
                         "position": position.astype(np.int64),
                         "code": icd_labels[rep_icd[flat]] if len(flat) else icd_labels[:0],
                         "age": age_labels[rep_age[flat]] if len(flat) else age_labels[:0]},
                        columns=COLUMNS)


def _figures(traj, trees, icd, age, rel_icd, rel_age, rep_icd, rep_age, rep_group, sizes):
    u, v, actual = mx.workload(icd, age, traj.owner(), traj.n)
    estimate = mx.estimated_counts(u, v, rep_icd, rep_age, rep_group, sizes, trees.icd, trees.age)
    icd_loss, age_loss = pair_loss(trees.icd, icd, rel_icd), pair_loss(trees.age, age, rel_age)
    icd_levels = mx.level_histogram(trees.icd, rel_icd, trees.icd.levels)
    age_levels = mx.level_histogram(trees.age, rel_age, trees.age.levels)
    return {
        "ilm": dataset_lm(icd_loss, traj.offsets),
        "alm": dataset_lm(age_loss, traj.offsets),
        "ilm_by_level": mx.lm_by_level(trees.icd, rel_icd, icd_loss, traj.offsets),
        "alm_by_level": mx.lm_by_level(trees.age, rel_age, age_loss, traj.offsets),
        "avg_re": mx.avg_re(actual.astype(float), estimate),
        "n_queries": int(len(u)),
        "n_patients": int(traj.n),
        "n_pairs": int(len(icd)),
        "n_clusters": int(len(sizes)),
        "min_cluster_size": int(sizes.min()) if len(sizes) else 0,
        "max_cluster_size": int(sizes.max()) if len(sizes) else 0,
        "suppressed_pairs": int(np.sum(rel_icd < 0)),
        "icd_levels": icd_levels,
        "age_levels": age_levels,
        "icd_kept_below_root": float(100.0 * np.mean(rel_icd > 0)) if len(rel_icd) else 0.0,
        **_kept(trees, icd_levels, age_levels),
    }


def _kept(trees: Trees, icd_levels: dict, age_levels: dict) -> dict:
    """The two shares IV.4.4 quotes (only with the default trees' levels); an
    ICD-10-CM category is read as ICD-9-CM's 3-digit level, under the same
    name, so that reports and thresholds read one figure in both systems."""
    out = {}
    level = hz.category_level(trees.icd.levels)
    if level is not None:
        out["icd_kept_3digit_or_finer"] = mx.kept_at_or_below(icd_levels, trees.icd.levels,
                                                               level)
    if "16-year" in trees.age.levels:
        out["age_kept_16year_or_finer"] = mx.kept_at_or_below(age_levels, trees.age.levels,
                                                              "16-year")
    return out
