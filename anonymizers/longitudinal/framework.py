"""LDA, the Longitudinal Data Anonymizer (Tamersoy 2011, Chapter IV): (ICD, Age) trajectories
k-anonymized by MDAV clustering with A-GS or Baseline alignment; ``lda(pairs, LDAConfig(k=...))``.
Readings chosen and why: docs/methods/lda.md#longitudinal-framework."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from anonymizers.errors import InputError
from anonymizers.hierarchy import ROOT
from anonymizers.longitudinal import hierarchies as hz
from anonymizers.longitudinal import shared_codes
from anonymizers.longitudinal.alignment import Pairs, Trees, ags, baseline
from anonymizers.longitudinal.batch import CostModel, Encoded, ags_costs, baseline_costs
from anonymizers.longitudinal.clustering import greedy, lookahead, mdav, trajectory_keys
from anonymizers.longitudinal.config import LDAConfig
from anonymizers.longitudinal.loss import pair_loss
from anonymizers.longitudinal.refine import refine
from anonymizers.longitudinal.release import Release, assemble
from anonymizers.longitudinal.trajectories import Trajectories, build_trajectories
from anonymizers.pseudonyms import generator


class NothingToRelease(InputError):
    """The input cannot give a release that keeps anything (see module doc)."""


@dataclass(frozen=True)
class LDAResult:
    """A release and its figures.

    ``records`` (patient_id, position, code, age) is the release: one row per
    released pair, patient ids are fresh pseudonyms, values are hierarchy
    labels (``401.1``, ``401-405``, ``*``; ``33``, ``33-40``, ``*``).
    ``patients`` lists every released pseudonym, including those whose
    trajectory was suppressed entirely (they have no rows).  ``metrics``
    holds ILM, ALM, AvgRE, level histograms and counts.  ``pseudonym_map``
    (pseudonym -> original patient_id) is for the verifier and must never be
    released; nor ``unknown_codes`` (codes outside the hierarchy).
    """

    records: pd.DataFrame
    patients: np.ndarray
    metrics: dict
    pseudonym_map: pd.DataFrame
    unknown_codes: list


def lda(pairs: pd.DataFrame, config: LDAConfig, source: str = "pairs") -> LDAResult:
    """Anonymize ``patient_id,code,age[,service_date]`` pairs with LDA."""
    traj = build_trajectories(pairs, source)
    if traj.n < config.k:
        raise NothingToRelease(source, f"{traj.n} patient(s) for k={config.k}: no cluster of "
                                       f"k patients can be formed, nothing can be released")
    rng = np.random.default_rng(config.seed)
    trees, icd, age, unknown = _encode(traj, config)
    align, distance, n_calls = _aligners(traj, trees, icd, age, config)
    keys = trajectory_keys(icd, age, traj.offsets)

    def original(t: int) -> Pairs:
        span = slice(traj.offsets[t], traj.offsets[t + 1])
        return Pairs.original(icd[span], age[span])

    grow, first = _growth(original, align, distance, n_calls, trees, icd, age, traj, config)
    clusters = mdav(traj.n, config.k, distance, keys, rng, grow, first)
    if config.refine_rounds:
        clusters = refine(clusters, config.k, config.refine_rounds, grow, distance,
                          partial(_cluster_loss, traj=traj, trees=trees, icd=icd, age=age,
                                  w=(config.w_icd, config.w_age)))
    rel = assemble(traj, trees, icd, age, clusters,
                   generator(config.pseudonym_key, config.seed, rng))
    if not _keeps_anything(rel.records):
        raise NothingToRelease(source, f"every pair would be suppressed or released as "
                                       f"('*', '*') at k={config.k}: the release keeps nothing")
    metrics = _metrics(config, traj, rel, unknown, n_calls[0] + traj.n - len(clusters))
    codes_out = sorted(set(traj.codes[unknown].tolist()))
    return LDAResult(rel.records, rel.patients, metrics, rel.pseudonym_map, codes_out)


def _encode(traj: Trajectories, config: LDAConfig):
    age_h = hz.age_hierarchy() if config.age_hierarchy is None else config.age_hierarchy
    if config.icd_hierarchy is None:
        display, level_of, levels = hz.ICD_STYLE[config.code_system]
        icd_tree, icd, unknown = hz.encode_tree(hz.icd_hierarchy(config.code_system),
                                                traj.codes, display, level_of, levels)
    else:
        icd_tree, icd, unknown = hz.encode_tree(config.icd_hierarchy, traj.codes)
    age_tree, age, _ = hz.encode_tree(
        age_h, traj.ages.astype(str),
        level_of=hz.age_level if config.age_hierarchy is None else None,
        levels=hz.AGE_LEVELS if config.age_hierarchy is None else ())
    if config.icd_domain == "data":
        icd_tree = hz.data_domain(icd_tree, icd)
    return Trees(icd_tree, age_tree), icd, age, unknown


def _growth(original, align, distance, n_calls, trees, icd, age, traj, config):
    """IV.3.2's greedy growth and MDAV's first member, or the opt-in look-ahead
    and its longest-first member (shared_codes); the look-ahead's trial
    alignments are counted in ``n_calls``."""
    cost = _growth_cost(distance, trees, icd, age, traj, config)
    if not config.lookahead:
        return greedy(original, align, cost), None

    def trial(*args):
        n_calls[0] += 1
        return align(*args)
    score = shared_codes.kept_score(trees.icd, trees.age, config.age_block)
    return (lookahead(original, align, cost, score, config.lookahead, trial),
            shared_codes.longest(np.diff(traj.offsets)))


def _growth_cost(distance, trees, icd, age, traj, config):
    """IV.3.2's growth cost, less the opt-in shared-code bonus and plus its
    age-block price (shared_codes)."""
    if not config.shared_code_bonus:
        return distance
    shared = shared_codes.SharedCategories(trees.icd, icd, traj.offsets)
    cost = shared_codes.credited(distance, shared, config.shared_code_bonus)
    if not config.age_block:
        return cost
    spans = shared_codes.AgeSpans(trees.age, age, traj.offsets)
    return shared_codes.blocked(cost, spans, config.age_block, config.shared_code_bonus)


def _cluster_loss(cluster, traj, trees, icd, age, w) -> float:
    """The cluster's part of ``n * (w_icd * ILM + w_age * ALM)`` (Definition 8)."""
    x, total = cluster.trajectory, 0.0
    for t, pos in zip(cluster.members, cluster.positions):
        span = slice(traj.offsets[t], traj.offsets[t + 1])
        kept, at = pos >= 0, np.maximum(pos, 0)
        rel_icd = np.where(kept, x.icd[at], -1) if len(x) else np.full(len(pos), -1)
        rel_age = np.where(kept, x.age[at], -1) if len(x) else np.full(len(pos), -1)
        total += (w[0] * pair_loss(trees.icd, icd[span], rel_icd).sum()
                  + w[1] * pair_loss(trees.age, age[span], rel_age).sum()) / len(pos)
    return float(total)


def _keeps_anything(records: pd.DataFrame) -> bool:
    return bool(((records["code"] != ROOT) | (records["age"] != ROOT)).any())


def _aligners(traj, trees, icd, age, config):
    iu, iv = np.unique(icd, return_inverse=True)
    au, av = np.unique(age, return_inverse=True)
    enc = Encoded(iv.ravel(), av.ravel(), iu, au, traj.offsets)
    calls = [0]
    weighted = config.member_weighted
    if config.alignment == "a-gs":
        model = CostModel(enc, trees, config.w_icd, config.w_age)
        align = partial(_ags, trees=trees, w=(config.w_icd, config.w_age), weighted=weighted)
        costs = ags_costs
    else:
        model = CostModel(enc, trees, 1.0, 1.0)
        align = partial(_baseline, trees=trees)
        costs = baseline_costs

    def distance(t, candidates, members=1):
        calls[0] += len(candidates)
        return costs(model, t, candidates, members if weighted else 1)
    return align, distance, calls


def _ags(x, y, ilm, alm, members, trees, w, weighted):
    return ags(x, y, trees, w[0], w[1], ilm, alm, members if weighted else 1)


def _baseline(x, y, ilm, alm, members, trees):
    return baseline(x, y, trees, ilm, alm)


def _metrics(config: LDAConfig, traj: Trajectories, rel: Release, unknown: np.ndarray,
             n_alignments: int) -> dict:
    return {"k": int(config.k), "alignment": config.alignment,
            "w_icd": float(config.w_icd), "w_age": float(config.w_age),
            "icd_domain": config.icd_domain, "code_system": config.code_system,
            **rel.metrics,
            "unknown_codes": int(len(set(traj.codes[unknown].tolist()))),
            "pairs_with_unknown_code": int(unknown.sum()),
            "ages_outside_domain": int(np.sum(rel.age_outside)),
            "n_alignments": int(n_alignments)}
