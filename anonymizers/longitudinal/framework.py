"""LDA, the Longitudinal Data Anonymizer (Tamersoy 2011, Chapter IV): (ICD, Age) trajectories
k-anonymized by MDAV clustering with A-GS or Baseline alignment; ``lda(pairs, LDAConfig(k=...))``.
Readings chosen and why: docs/methods/lda.md#longitudinal-framework."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from anonymizers.codesystems import check_system
from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import ROOT, Hierarchy
from anonymizers.longitudinal import hierarchies as hz
from anonymizers.longitudinal.alignment import Pairs, Trees, ags, baseline
from anonymizers.longitudinal.batch import CostModel, Encoded, ags_costs, baseline_costs
from anonymizers.longitudinal.clustering import greedy, mdav, trajectory_keys
from anonymizers.longitudinal.release import Release, assemble
from anonymizers.longitudinal.trajectories import Trajectories, build_trajectories
from anonymizers.pseudonyms import generator

ALIGNMENTS = ("a-gs", "baseline")
ICD_DOMAINS = ("data", "hierarchy")


class NothingToRelease(InputError):
    """The input cannot give a release that keeps anything (see module doc)."""


@dataclass(frozen=True)
class LDAConfig:
    """Parameters of LDA.

    Parameters
    ----------
    k : int
        Privacy level: every released trajectory is shared by at least k
        patients.  Must be >= 1 and at most the number of patients.
    w_icd : float, default 0.5
        Weight of ICD information loss in A-GS (Algorithm 3); >= 0.
    w_age : float, default 0.5
        Weight of Age information loss in A-GS; >= 0 and w_icd + w_age = 1.
        Baseline ignores both weights, as in the thesis.
    alignment : {'a-gs', 'baseline'}, default 'a-gs'
        The alignment used both as clustering distance and to anonymize a
        cluster.
    seed : int or None, default None
        Seed of the numpy Generator behind every random choice (MDAV's ties,
        pseudonyms).  None draws fresh entropy: the release is then not
        reproducible.
    code_system : {'icd9cm', 'icd10cm'}, default 'icd9cm'
        Code system of the data (``anonymizers.codesystems``): with no
        ``icd_hierarchy``, LDA generalizes codes through this system's tree
        and releases them with its display and level names (``401.1`` and
        ``3-digit``; ``S52.521A`` and ``category``).
    icd_hierarchy : Hierarchy or None, default None
        Generalization tree for codes; None is the tree of ``code_system``.
    age_hierarchy : Hierarchy or None, default None
        Generalization tree for ages (labels are the ages as strings); None is
        the full binary tree over 1..128 of Section IV.4.4.
    icd_domain : {'data', 'hierarchy'}, default 'data'
        What ``|A|`` and the leaf counts of Definition 4 count for ICD: the
        dataset's distinct codes (Table 3's ``|ICD|``) or every leaf of the
        ICD hierarchy (see the module doc).
    pseudonym_key : bytes or None, default None
        Secret key of the pseudonym permutation (``anonymizers.pseudonyms``):
        with it the permutation cannot be drawn again from the seed alone.
        Not shown in the config's repr.
    """

    k: int
    w_icd: float = 0.5
    w_age: float = 0.5
    alignment: str = "a-gs"
    seed: int | None = None
    code_system: str = "icd9cm"
    icd_hierarchy: Hierarchy | None = field(default=None, compare=False)
    age_hierarchy: Hierarchy | None = field(default=None, compare=False)
    icd_domain: str = "data"
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ParameterError("k", f"must be a whole number >= 1, got {self.k!r}")
        for name in ("w_icd", "w_age"):
            w = getattr(self, name)
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0:
                raise ParameterError(name, f"must be a number >= 0, got {w!r}")
        if abs(self.w_icd + self.w_age - 1.0) > 1e-9:
            raise ParameterError("w_icd", f"w_icd + w_age must be 1, got "
                                          f"{self.w_icd} + {self.w_age}")
        if self.alignment not in ALIGNMENTS:
            raise ParameterError("alignment", f"must be one of {list(ALIGNMENTS)}, "
                                              f"got {self.alignment!r}")
        if self.icd_domain not in ICD_DOMAINS:
            raise ParameterError("icd_domain", f"must be one of {list(ICD_DOMAINS)}, "
                                               f"got {self.icd_domain!r}")
        check_system(self.code_system)
        if self.seed is not None and (isinstance(self.seed, bool) or
                                      not isinstance(self.seed, (int, np.integer))
                                      or self.seed < 0):
            raise ParameterError("seed", f"must be a whole number >= 0 or None, got {self.seed!r}")


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

    clusters = mdav(traj.n, config.k, distance, keys, rng,
                    greedy(original, align, distance))
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


def _keeps_anything(records: pd.DataFrame) -> bool:
    return bool(((records["code"] != ROOT) | (records["age"] != ROOT)).any())


def _aligners(traj, trees, icd, age, config):
    iu, iv = np.unique(icd, return_inverse=True)
    au, av = np.unique(age, return_inverse=True)
    enc = Encoded(iv.ravel(), av.ravel(), iu, au, traj.offsets)
    calls = [0]
    if config.alignment == "a-gs":
        model = CostModel(enc, trees, config.w_icd, config.w_age)
        align = partial(_ags, trees=trees, w=(config.w_icd, config.w_age))
        costs = ags_costs
    else:
        model = CostModel(enc, trees, 1.0, 1.0)
        align = partial(_baseline, trees=trees)
        costs = baseline_costs

    def distance(t, candidates):
        calls[0] += len(candidates)
        return costs(model, t, candidates)
    return align, distance, calls


def _ags(x, y, ilm, alm, trees, w):
    return ags(x, y, trees, w[0], w[1], ilm, alm)


def _baseline(x, y, ilm, alm, trees):
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
