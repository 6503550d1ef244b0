"""ICD-10-CM beside ICD-9-CM on the same data (issue 27; benchmarks/icd10.md
tells the story).  Every method runs the data of its ICD-9 benchmark with
each ICD-9 code mapped to ICD-10-CM through CMS's GEM
(``anonymizers.codesystems.gem_forward``); rows whose code the GEM cannot
carry are dropped from both systems' data, so both anonymize the very same
records.  Each (method, system) runs in its own process (``--one``) so that
its wall time and peak memory (``benchmarks/results/icd10_<case>_<system>
.json``) are its own; ``python -m benchmarks.bench_icd10 --case ugaclip``
runs both systems of a case, ``--table`` prints the markdown table of
icd10.md from the result files.

Cases (sizes and settings of the ICD-9 benchmark named):

- ``ugaclip`` (bench_ugaclip): PPE (single-visit, k = 5) then UGACLIP on
  DE-SynPUF TestB's 424 beneficiaries (3-digit-category policy, level 1)
  and on MEPS 2005 conditions (26,854 patients, level-2 policy: ICD-9
  sections, ICD-10 blocks); the semantic weights on the system's tree.
- ``ugaclip_blocks``: DE-SynPUF with the level-2 policy; ``ugaclip_bound``:
  a lower bound on the occurrences any level-1 release suppresses, and the
  bound run's repaired plan; ``ugaclip_planned``: UGACLIP guided by its
  suppression plan; ``ugaclip_clinical``: CCS (ICD-9) / CCSR (ICD-10) as
  the utility policy; ``ugaclip_carried``: DE-SynPUF with ICD-9's level-1
  policy in both systems, carried into ICD-10-CM through CMS's GEMs as
  ``--utility-policy icd9-level-1 --gem`` carries it (the same diseases).
- ``disassociation`` (bench_disassociation): MEPS, k = 5, m = 2, level-1
  policy of the system; utility on the default reconstruction; W1 also on
  ICD-9's W1 queries carried through the map.
- ``gccens`` (bench_gccens): the generator's 300,000 members rolled up to
  categories 250, 272, 401, 724 and the 2,700-record tilted sample; the
  three (k, caps) settings.
- ``medco`` (bench_medco): MEPS, minimum anonymity set 150, 3 clusters;
  the least ratio of any clustering and the controls of ``case_medco``.
- ``hhp`` (bench_hhp): the generator's 113,000 members' claims, defaults;
  ICD-10 with the ``hhp-2012-icd10-v1`` policy and hierarchies.
- ``lda`` (the first case of this file): LDA on DE-SynPUF trajectories
  (module ``case_lda``; results in ``icd10.json``).

MEPS and the GCCens roll-up hold 3-character ICD-9 categories, which the GEM
lists for few codes (``250`` has no entry; its descendants map to E08-E13);
they are mapped by ``category_map`` (``gem_forward(..., categories=True)``:
the GEM's own entry if it has one, else the ICD-10-CM category most of the
category's GEM descendants map to).
DE-SynPUF and the generator's claims hold full codes and are mapped by
``gem_forward`` (its docstring gives the rule).

Case ``lda``: LDA (Tamersoy 2011) at k = 5 on DE-SynPUF TestB claims
trajectories of every beneficiary with claims (``bench_lda.synpuf_pairs``:
one (code, age) pair per distinct diagnosis code and age of a patient), in two code
selections of bench_lda (``synpuf_release``: the release's ICD-9 categories;
``synpuf_d50``: the 50 codes held by the most patients).  Every ICD-9 code
is mapped to one ICD-10-CM code through CMS's GEM
(``anonymizers.codesystems.gem_forward``; the rule for one-to-many is its
docstring's); pairs whose code the GEM cannot carry are dropped from both
systems, so that both runs anonymize the very same trajectories.

Each cohort runs A-GS three times: ICD-9 codes on the ICD-9 tree, the mapped
codes on the ICD-9 tree (what the project did before: every code unknown,
released as ``*``), and the mapped codes on the ICD-10-CM tree.  The
verifier runs on every release with the tree the release used.  The figure
of the issue is ``below_root_pct``: the percent of the input's ICD values
released below the root (a suppressed pair counts as not kept).
``python -m benchmarks.bench_icd10`` (no ``--case``) runs the LDA case.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from functools import lru_cache
from itertools import pairwise

import numpy as np
import pandas as pd

from anonymizers.codesystems import gem_forward
from anonymizers.disassociation import metrics as dis_metrics
from anonymizers.hierarchy import ROOT
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.hierarchies import icd_hierarchy
from anonymizers.verify.longitudinal import verify_lda
from benchmarks import bench_disassociation as bd
from benchmarks.bench_lda import SYNPUF, synpuf_cohorts, synpuf_pairs
from benchmarks.harness import DATASETS, RESULTS, run_benchmark

K = 5
SEED = 2011
PATIENTS = None  # every TestB beneficiary with claims, as bench_lda (was 300 before 2026-11-28)
GEM = DATASETS / "icd9" / "icd9toicd10cmgem.csv.gz"
COHORTS = ("synpuf_release", "synpuf_d50")
MUST_KEEP = 0.8  # issue 27: at least 80% of ICD-9's share of values below the root
KEEP = ("ilm", "alm", "suppressed_pairs", "released_pairs", "unknown_codes", "n_clusters")


def mapped_cohort(pairs: pd.DataFrame, mapping) -> tuple[pd.DataFrame, dict]:
    """``pairs`` with an ``icd10`` column, less the pairs the GEM cannot carry."""
    icd10 = pairs["code"].map(mapping.codes)
    kept = pairs.assign(icd10=icd10)[icd10.notna()].reset_index(drop=True)
    rules = pd.Series([mapping.rule[c] for c in kept["code"]], dtype=object)
    rules = rules.where(~rules.str.startswith("first of"), "first of several")
    return kept, {"pairs": len(pairs), "pairs_unmapped": int(icd10.isna().sum()),
                  "codes_unmapped": int(pairs.loc[icd10.isna(), "code"].nunique()),
                  "icd9_codes": int(kept["code"].nunique()),
                  "icd10_codes": int(kept["icd10"].nunique()),
                  "pairs_by_rule": {k: int(v) for k, v in rules.value_counts().items()}}


def run(pairs: pd.DataFrame, system: str | None) -> dict:
    """A-GS on ``pairs`` (patient_id, code, age) with the tree of ``system``
    (None: the default tree, ICD-9-CM) and the verifier's verdict."""
    tree = None if system is None else icd_hierarchy(system)
    t0 = time.perf_counter()
    result = lda(pairs, LDAConfig(k=K, seed=SEED, icd_hierarchy=tree))
    seconds = time.perf_counter() - t0
    verdict = verify_lda(result.records, result.pseudonym_map, pairs, K, icd_hierarchy=tree)
    codes = result.records["code"].astype(str)
    below = codes != ROOT
    finer = below & ~codes.str.contains("-", regex=False)
    return {"below_root_pct": round(100.0 * below.sum() / len(pairs), 2),
            "below_root_of_released_pct": round(100.0 * below.mean(), 2),
            "category_or_finer_pct": round(100.0 * finer.sum() / len(pairs), 2),
            "seconds": round(seconds, 2), "verifier_ok": verdict.ok,
            "violations": list(verdict.violations[:3]),
            **{key: result.metrics[key] for key in KEEP}}


def case_lda(cohort: pd.DataFrame, mapping) -> dict:
    both, data = mapped_cohort(cohort.drop(columns="service_date"), mapping)
    icd9 = both[["patient_id", "code", "age"]]
    icd10 = both[["patient_id", "icd10", "age"]].rename(columns={"icd10": "code"})
    out = {"data": {**data, "patients": int(both["patient_id"].nunique())},
           "icd9_on_icd9_tree": run(icd9, None),
           "icd10_on_icd9_tree_before": run_or_refusal(icd10, None),
           "icd10_on_icd10_tree": run(icd10, "icd10cm")}
    base = out["icd9_on_icd9_tree"]["below_root_pct"]
    ratio = out["icd10_on_icd10_tree"]["below_root_pct"] / base if base else None
    out["icd10_over_icd9"] = None if ratio is None else round(ratio, 3)
    out["must_show_holds"] = bool(ratio is not None and ratio >= MUST_KEEP)
    return out


def run_or_refusal(pairs: pd.DataFrame, system: str | None) -> dict:
    """``run``, or LDA's refusal when the release would keep nothing."""
    from anonymizers.longitudinal.framework import NothingToRelease
    try:
        return run(pairs, system)
    except NothingToRelease as refusal:
        return {"below_root_pct": 0.0, "refused": refusal.problem}


def figures() -> dict:
    if not SYNPUF.is_dir() or not GEM.is_file():
        return {"lda": f"skipped: {SYNPUF} or {GEM} not found"}
    pairs = synpuf_pairs(limit=PATIENTS)
    mapping = gem_forward(pd.read_csv(GEM, dtype=str), sources=pairs["code"].unique())
    cohorts = synpuf_cohorts(pairs)
    return {"lda": {name: case_lda(cohorts[name], mapping) for name in COHORTS}}


# --- the other methods: each on its ICD-9 benchmark's data, mapped ------------

SYSTEMS = ("icd9cm", "icd10cm")
CASES = ("ugaclip", "ugaclip_blocks", "ugaclip_carried", "ugaclip_bound", "ugaclip_clinical",
         "ugaclip_planned",
         "ugaclip_realised", "ugaclip_realised_nodes",
         "disassociation", "gccens", "medco", "hhp")
UTILITY_WITHIN = 0.2  # issue 27: utility within 20% of the same data in ICD-9


@lru_cache(maxsize=1)
def gem_table() -> pd.DataFrame:
    return pd.read_csv(GEM, dtype=str)


def code_map(codes) -> dict:
    """Full ICD-9 codes -> one ICD-10-CM code each (``gem_forward``)."""
    return gem_forward(gem_table(), sources=pd.unique(pd.Series(codes, dtype=object))).codes


def category_map(codes) -> dict:
    """3-character ICD-9 categories -> one ICD-10-CM code each
    (``gem_forward(..., categories=True)``: the GEM's own entry for the
    category if it has one, else the ICD-10-CM category most of the
    category's GEM descendants map to).  A code with no descendant in the
    GEM (MEPS's -1, -9) is not mapped."""
    codes = pd.unique(pd.Series(codes, dtype=object))
    full = gem_forward(gem_table(), sources=codes, categories=True).codes
    return {c: full[c] for c in codes if c in full}


def same_data(df: pd.DataFrame, mapping: dict, system: str, column: str = "code"):
    """``df`` less the rows whose code ``mapping`` cannot carry, in ``system``'s
    codes, and what was dropped."""
    target = df[column].map(mapping)
    kept = df[target.notna()].reset_index(drop=True)
    data = {"rows": len(df), "rows_unmapped": int(target.isna().sum()),
            "codes_unmapped": int(df.loc[target.isna(), column].nunique()),
            "icd9_codes": int(kept[column].nunique()),
            "icd10_codes": int(target.dropna().nunique())}
    if system == "icd10cm":
        kept = kept.assign(**{column: target.dropna().to_numpy()})
    return kept, data


def case_ugaclip(system: str, small: bool) -> dict:
    from benchmarks import bench_ugaclip as bu

    return {"synpuf_single-visit": ppe_ugaclip(bu.load_synpuf, False, 1, system, small),
            "meps_single-visit": ppe_ugaclip(bu.load_meps, True, 2, system, small)}


def case_ugaclip_blocks(system: str, small: bool) -> dict:
    """DE-SynPUF with the level-2 policy (ICD-9 sections, ICD-10-CM blocks):
    ICD-10-CM's 3-character categories are narrower than ICD-9's (icd10.md)."""
    from benchmarks import bench_ugaclip as bu

    return {"synpuf_single-visit_level2": ppe_ugaclip(bu.load_synpuf, False, 2, system, small)}


def case_ugaclip_carried(system: str, small: bool) -> dict:
    """DE-SynPUF with ICD-9-CM's level-1 policy in both systems: in ICD-10-CM
    its categories carried through CMS's GEMs as the command line and release
    files carry them (``level_policies.level_policy``), so both releases keep
    the same diseases apart (icd10.md)."""
    from benchmarks import bench_ugaclip as bu

    return {"synpuf_single-visit_carried": ppe_ugaclip(bu.load_synpuf, False, "carried",
                                                       system, small)}


def ugaclip_inputs(load, categories: bool, level, system: str, small: bool) -> dict:
    """``load``'s data mapped (``category_map`` if ``categories``, else
    ``code_map``), its PPE policy (single-visit, k) and the level-``level``
    utility policy of ``system`` (``"clinical"``: ``clinical_policy``)."""
    from anonymizers.level_policies import level_policy
    from anonymizers.policies import hierarchy_policy
    from anonymizers.ppe import PPEConfig, extract_policy
    from benchmarks import bench_ugaclip as bu

    raw = load(bu.SMALL["meps" if categories else "synpuf"] if small else None)
    df, data = same_data(raw, (category_map if categories else code_map)(raw["code"]), system)
    t0 = time.perf_counter()
    policy = [list(c) for c in extract_policy(df, PPEConfig(K, "single-visit")).constraints]
    t_ppe = time.perf_counter() - t0
    patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    codes = patients["code"].unique()
    if level == "clinical":
        utility = clinical_policy(codes, system)
    elif level == "carried":  # the command line's --utility-policy icd9-level-1 --gem GEM
        utility = level_policy("icd9-level-1", codes, system, str(GEM))
    else:
        utility = hierarchy_policy(codes, level, code_system=system)
    return {"data": data, "df": df, "policy": policy, "ppe_seconds": round(t_ppe, 3),
            "patients": patients, "utility": utility}


def ppe_ugaclip(load, categories: bool, level, system: str, small: bool,
                plan_seconds: float = 0.0, plan_weights: str = "codes",
                realise_plan: bool = False, **plan_budget) -> dict:
    """PPE (single-visit, k) then UGACLIP with the level-``level`` policy of
    ``system`` and its tree, on ``load``'s data mapped (``ugaclip_inputs``);
    each checked by its verifier.  ``plan_seconds``: UGACLIP guided by its
    suppression plan computed in that time (``UGACLIPConfig``'s
    ``plan_seconds, plan_weights, realise_plan``); ``plan_budget``: its
    ``plan_nodes, plan_rounds``.  ``release_sha256`` is the digest of the
    release file's JSON, to compare runs."""
    from anonymizers.hierarchy import for_system
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip
    from anonymizers.verify.ppe import verify_policy
    from benchmarks import bench_ugaclip as bu

    x = ugaclip_inputs(load, categories, level, system, small)
    policy, patients, utility = x["policy"], x["patients"], x["utility"]
    ppe_ok = verify_policy(x["df"], policy, K, "single-visit").ok
    config = UGACLIPConfig(K, seed=bu.SEED, plan_seconds=plan_seconds,
                           plan_weights=plan_weights, realise_plan=realise_plan, **plan_budget)
    tree = for_system(system)
    made = []

    def anonymize():
        made.append(ugaclip(patients, policy, utility, config, hierarchy=tree))
        return made[-1]
    fig = bu.method_figures("UGACLIP", anonymize, patients, policy)
    if made:
        fig["release_sha256"] = hashlib.sha256(json.dumps(
            made[0].to_dict(), sort_keys=True, default=str).encode()).hexdigest()
    fig["kept_occurrences_pct"] = round(
        100.0 * (1 - fig["suppressed_occurrences"] / len(patients)), 2)
    fig["kept_codes_pct"] = round(100.0 * (1 - fig["suppressed_codes_share"]), 2)
    fig["utility_satisfied_pct"] = round(
        100.0 * fig["utility_satisfied"] / max(fig["utility_present"], 1), 2)
    return {"data": x["data"], "n_patients": int(patients["patient_id"].nunique()),
            "n_codes": int(patients["code"].nunique()), "utility_level": level,
            "utility_constraints": len(utility),
            "utility_mean_codes": round(len(patients["code"].unique()) / max(len(utility), 1), 2),
            "utility_ungrouped_codes": int(patients["code"].nunique()
                                           - len({c for u in utility for c in u})),
            "ppe_seconds": x["ppe_seconds"], "ppe_constraints": len(policy),
            "ppe_verifier_ok": ppe_ok, "ugaclip": fig}


def case_ugaclip_clinical(system: str, small: bool) -> dict:
    """DE-SynPUF as case ``ugaclip``, with each system's standard clinical
    grouping as the utility policy (``clinical_policy``)."""
    from benchmarks import bench_ugaclip as bu

    return {"synpuf_single-visit_clinical": ppe_ugaclip(bu.load_synpuf, False, "clinical",
                                                        system, small)}


PLAN_SECONDS = 120.0  # UGACLIP's own suppression plan, cases ugaclip_planned / _realised


def case_ugaclip_planned(system: str, small: bool) -> dict:
    """DE-SynPUF, level-1 policy, as case ``ugaclip``, with UGACLIP's line 17
    guided by its suppression plan (``plan_seconds``), the plan minimising
    distinct codes, then occurrences (``plan_weights``; docs/methods/ugaclip.md)."""
    from benchmarks import bench_ugaclip as bu

    return {"synpuf_single-visit_planned": ppe_ugaclip(bu.load_synpuf, False, 1, system, small,
                                                       PLAN_SECONDS),
            "synpuf_single-visit_planned_occurrences": ppe_ugaclip(
                bu.load_synpuf, False, 1, system, small, PLAN_SECONDS, "occurrences"),
            "plan_seconds": PLAN_SECONDS}


def case_ugaclip_realised(system: str, small: bool) -> dict:
    """As case ``ugaclip_planned``, with the plan suppressed before Algorithm 2
    (``realise_plan``; docs/methods/ugaclip.md#ugaclip-realise)."""
    from benchmarks import bench_ugaclip as bu

    return {f"synpuf_single-visit_realised_{w}": ppe_ugaclip(
                bu.load_synpuf, False, 1, system, small, PLAN_SECONDS, w, realise_plan=True)
            for w in ("codes", "occurrences")} | {"plan_seconds": PLAN_SECONDS}


# the deterministic budget of case ugaclip_realised_nodes (docs/methods/ugaclip.md#ugaclip-plan):
# HiGHS nodes per covering round, rounds at most; chosen to take about PLAN_SECONDS here
PLAN_NODES, PLAN_ROUNDS = 1, 8


def case_ugaclip_realised_nodes(system: str, small: bool) -> dict:
    """As case ``ugaclip_realised`` with the occurrence plan, its MILP limited
    by work (``plan_nodes``, ``plan_rounds``) instead of wall-clock time: the
    release depends on the input and settings only, so two runs must give
    the same ``release_sha256``."""
    from benchmarks import bench_ugaclip as bu

    budget = {"plan_nodes": PLAN_NODES, "plan_rounds": PLAN_ROUNDS}
    return {"synpuf_single-visit_realised_nodes": ppe_ugaclip(
                bu.load_synpuf, False, 1, system, small, 0.0, "occurrences",
                realise_plan=True, **budget)} | budget


CCS = DATASETS / "icd9" / "CCS-SingleDiagnosisGrouper.txt.gz"


def clinical_policy(codes, system: str) -> list[list[str]]:
    """``codes`` grouped by the system's standard clinical grouping: HCUP's
    single-level CCS for ICD-9-CM (Appendix A, ``CCS``), CCSR's default
    inpatient category for ICD-10-CM (``anonymizers.ccsr``).  A code neither
    lists (header codes such as 2766, codes newer than the file) is left in
    no group, as ``hierarchy_policy`` leaves a code it cannot place."""
    from anonymizers import ccsr

    codes = pd.Series(pd.unique(pd.Series(codes, dtype=object)), dtype=object)
    if system == "icd10cm":
        group = pd.Series(ccsr.groups(codes.to_numpy(), unknown="none"), dtype=object)
    else:
        group = codes.map(ccs_icd9())
    keep = group.notna().to_numpy()
    return sorted(sorted(g) for g in codes[keep].groupby(group[keep].to_numpy()).agg(list))


@lru_cache(maxsize=1)
def ccs_icd9() -> dict:
    """ICD-9-CM code -> single-level CCS category (HCUP Appendix A: a line
    ``<n>  <name>`` opens a category, indented lines list its codes)."""
    import gzip

    out, category = {}, None
    with gzip.open(CCS, "rt") as text:
        for line in text:
            if line[:1].isdigit():
                category = line.split()[0]
            elif line.startswith(" ") and category is not None:
                out.update((code, category) for code in line.split())
    return out


BOUND_SECONDS = 300.0  # the occurrence bound's budget per system (bench_ugaclip: 600 for codes)


def case_ugaclip_bound(system: str, small: bool) -> dict:
    """DE-SynPUF, level-1 policy, as case ``ugaclip``: a lower bound on the
    code occurrences any release must suppress (``anonymizers.ugaclip.bound``
    with occurrence weights, Fig. S1A's measure; (R) then shrink cuts), so
    ``kept_occurrences_pct_at_most`` bounds from above what any release
    respecting the utility policy and the PPE policy keeps; and the bound
    run's last incumbent repaired to a feasible set (``plan_*``: a release
    of the group-generalized model keeps that much)."""
    from anonymizers.records import encode
    from anonymizers.ugaclip.bound import build_problem, relaxed_min_suppression
    from benchmarks import bench_ugaclip as bu

    x = ugaclip_inputs(bu.load_synpuf, False, 1, system, small)
    records = encode(x["patients"])
    problem = build_problem(records, x["policy"], x["utility"], K, weigh_occurrences=True)
    bound = relaxed_min_suppression(problem, time_limit=BOUND_SECONDS,
                                    round_limit=bu.ROUND_SECONDS, shrink=True)
    plan = bu.plan_figures(problem, bound.pop("incumbent"))
    bound.pop("suppressed")
    total = int(problem.weights.sum())
    plan_occ = int(problem.weights[plan.pop("codes")].sum())
    return {"data": x["data"], "occurrences": total, "ppe_constraints": len(x["policy"]),
            "constraints_in_problem": len(problem.constraints),
            "utility_constraints": len(x["utility"]), "budget_seconds": BOUND_SECONDS,
            "bound": bound, "suppressed_occurrences_at_least": bound["bound"],
            "kept_occurrences_pct_at_most": round(100.0 * (1 - bound["bound"] / total), 2),
            "plan": {**plan, "suppressed_occurrences": plan_occ,
                     "kept_occurrences_pct": round(100.0 * (1 - plan_occ / total), 2)}}


def case_disassociation(system: str, small: bool) -> dict:
    """MEPS k = 5, m = 2 as bench_disassociation.  Besides each system's own
    W1 (``are_w1``: frequent itemsets of that system's data), ``are_w1_icd9_
    queries`` is ARE on ICD-9's W1 itemsets carried through ``category_map``
    (in the ICD-9 run, ICD-9's W1 itself), so both systems answer the same
    questions; ``..._injective`` keeps the queries none of whose codes the
    map merges into one."""
    from anonymizers.disassociation.reconstruct import DEFAULT_ITEM_SUPPORT
    from anonymizers.policies import hierarchy_policy

    raw = bd.load_meps(400 if small else None)
    mapping = category_map(raw["code"])
    df, data = same_data(raw, mapping, system)
    codes = df["code"].unique()
    level1 = hierarchy_policy(codes, 1, code_system=system)
    level2 = hierarchy_policy(codes, 2, code_system=system)
    icd9 = df if system == "icd9cm" else same_data(raw, mapping, "icd9cm")[0]
    w1_icd9 = [q for qs in bd.Workloads(icd9, {}).w1.values() for q in qs]
    same = w1_icd9 if system == "icd9cm" else carried(w1_icd9, mapping)
    injective = [q for q, q9 in zip(same, w1_icd9) if len(q) == len(q9)]
    work = SameQueries(df, {"codes": level1, "sections": level2},
                       {"are_w1_icd9_queries": same, "are_w1_icd9_queries_injective": injective})
    run = bd.one_run(df, work, K, 2, level1, modes=(DEFAULT_ITEM_SUPPORT,))
    return {"data": data, "workloads": work.describe(), "meps_k5_m2": run}


def carried(queries, mapping: dict) -> list[tuple]:
    """Each query with its codes mapped (codes the map merges become one)."""
    return [tuple(sorted({mapping[c] for c in q})) for q in queries]


class SameQueries(bd.Workloads):
    """bench_disassociation's workloads plus fixed query sets (name -> queries),
    whose ARE each draw also reports."""

    def __init__(self, data: pd.DataFrame, policies: dict, fixed: dict):
        super().__init__(data, policies)
        self.fixed = fixed

    def describe(self) -> dict:
        return {**super().describe(), **{f"{n}_count": len(q) for n, q in self.fixed.items()}}

    def measure(self, drawn) -> dict:
        records = dis_metrics.as_records(drawn)
        return {**super().measure(records),
                **{n: dis_metrics.are(self.original, records, q) for n, q in self.fixed.items()}}


def case_gccens(system: str, small: bool) -> dict:
    from benchmarks import bench_gccens as bg

    n_members, n_sample = (3_000, 60) if small else (300_000, 2_700)
    t0 = time.perf_counter()
    ids, counts = bg.synthetic_counts(n_members)
    population, sample, shape = bg.make_data(ids, counts, n_sample)
    mapping = category_map(bg.CODES)
    population, data = same_data(population, mapping, system)
    sample, _ = same_data(sample, mapping, system)
    t_data = time.perf_counter() - t0
    runs = [bg.run_case(sample, population, k, caps) for k, caps in bg.CASES]
    return {"data": {**data, "mapping": mapping}, "data_seconds": round(t_data, 2),
            "n_members": n_members, "n_sample": n_sample, **shape, "runs": runs}


def case_medco(system: str, small: bool) -> dict:
    """MEPS at A = 150, 3 clusters as bench_medco, and what tells the data
    from the code system (``medco_with_bound`` on each): ``one_to_one``, only
    the codes whose ICD-10 target no other MEPS code shares (the same data
    in both systems up to labels); in the ICD-9 run, ``merged_as_icd10``:
    the ICD-9 codes with the map's merges made in ICD-9 (each code
    relabelled to the least ICD-9 code of its ICD-10 target)."""
    from benchmarks import bench_medco as bm

    raw = bm.load(small)
    mapping = category_map(raw["code"])
    df, data = same_data(raw, mapping, system)
    a, n_clusters = (20, 2) if small else (150, 3)
    name = f"meps_a{a}_k{n_clusters}"
    icd9 = same_data(raw, mapping, "icd9cm")[0]  # row for row with df
    target = icd9["code"].map(mapping)
    sources = icd9.groupby(target)["code"].agg(["nunique", "min"])
    single = target.map(sources["nunique"]).eq(1).to_numpy()
    out = {"data": data, "patients": int(df["patient_id"].nunique()),
           "codes": int(df["code"].nunique()),
           name: medco_with_bound(df, a, n_clusters),
           f"{name}_one_to_one": medco_with_bound(df[single], a, n_clusters)}
    if system == "icd9cm":
        merged = icd9.assign(code=target.map(sources["min"]).to_numpy())
        out[f"{name}_merged_as_icd10"] = medco_with_bound(merged, a, n_clusters)
    return out


def medco_with_bound(df: pd.DataFrame, a: int, n_clusters: int) -> dict:
    """MedCo's clustering and dummies on ``df`` (bench_medco.clustered), the
    least ratio of any clustering, and the dummies on the clusters that
    reach it (``on_least_clusters``: code runs of the sorted frequencies)."""
    from benchmarks import bench_medco as bm

    bound, clusters = least_ratio(df, a, n_clusters)
    return {"codes": int(df["code"].nunique()), **bm.clustered(df, a, n_clusters, bm.SEED),
            "least_ratio_any_clustering": bound,
            "on_least_clusters": bm.case(df, clusters, a, bm.SEED, None)}


def least_ratio(df: pd.DataFrame, a: int, n_clusters: int) -> tuple[float, list]:
    """A lower bound on the real ratio (Fig. 7) of any MedCo release of
    ``df`` whose clusters each hold at least ``a`` codes, at most
    ``n_clusters`` of them, whatever the clustering; and the clusters that
    attain it.

    A release keeps every real patient and leaves each cluster flat within
    1 (Zoveralli 3.3), so cluster C needs at least
    ``L_C = sum_c max(0, top_C - 1 - f_c) >= |C| (top_C - 1) - sum_C f``
    added occurrences (docs/methods/medco.md#dummies-bounds).  Order the
    clusters by top: the first j hold n_j codes, all at most top_j, so top_j
    is at least the n_j-th smallest frequency, which a partition of the
    sorted frequencies into runs attains; the minimum of the right-hand side
    over partitions is therefore the minimum over cut points of the sorted
    frequencies, searched exhaustively here (up to 3 clusters)."""
    if n_clusters > 3:
        raise ValueError("least_ratio searches at most 3 clusters")
    counts = df[["patient_id", "code"]].drop_duplicates()["code"].value_counts()
    counts = counts.sort_values(kind="stable")
    freq, n = counts.to_numpy(), len(counts)
    prefix = np.concatenate([[0], np.cumsum(freq)])

    def cost(i, j):  # the run [i, j) of the sorted frequencies
        return (j - i) * (freq[j - 1] - 1.0) - (prefix[j] - prefix[i])

    options = [(float(cost(0, n)), ())] if n >= a else []
    for cut in range(a, n - a + 1) if n_clusters >= 2 else ():
        options.append((float(cost(0, cut) + cost(cut, n)), (cut,)))
    if n_clusters == 3 and n >= 3 * a:
        c1, c2 = np.meshgrid(np.arange(a, n + 1), np.arange(a, n + 1), indexing="ij")
        ok = (c2 - c1 >= a) & (n - c2 >= a)
        c1, c2 = c1[ok], c2[ok]
        total = cost(0, c1) + cost(c1, c2) + cost(c2, n)
        best = int(np.argmin(total))
        options.append((float(total[best]), (int(c1[best]), int(c2[best]))))
    added, cuts = min(options)
    edges = [0, *cuts, n]
    clusters = [sorted(counts.index[lo:hi].astype(str)) for lo, hi in pairwise(edges)]
    ratio = 1.0 + max(added, 0.0) / float(freq.sum())
    return float(np.floor(ratio * 1e4) / 1e4), clusters  # rounded down: still a bound


def case_hhp(system: str, small: bool) -> dict:
    from anonymizers.claims import HHPConfig, hhp_release
    from anonymizers.verify.claims import verify_hhp
    from benchmarks import bench_hhp as bh

    n = bh.SMALL_MEMBERS if small else bh.N_MEMBERS
    policy = "hhp-2012-icd10-v1" if system == "icd10cm" else None
    options = ({"sample_size": 500, "ci_halfwidth": 0.02, "max_evaluations": 20}
               if small else {})
    config = HHPConfig(seed=bh.SEED, policy_path=policy, **options)
    t0 = time.perf_counter()
    raw = bh.make_claims(n)
    claims, data = same_data(raw, code_map(raw["dx_code"].dropna()), system, "dx_code")
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = hhp_release(claims, config)
    t_method = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_hhp(result, claims, policy_path=policy)
    t_verify = time.perf_counter() - t0
    m = result.metrics
    return {"data": data, "n_members": n, "policy": config.policy_source,
            "members_in": m["input"]["members"], "claims_in": m["input"]["claims"],
            "members_released": m["released"]["members"],
            "claims_released": m["released"]["claims"],
            "claims_released_pct": round(100.0 * m["released"]["claims"]
                                         / max(m["input"]["claims"], 1), 2),
            "members_removed_by_screening": m["members_removed_by_screening"],
            "chosen_node": m["chosen_node"], "risk": m["risk"],
            "information_loss": m["information_loss"], "nodes_evaluated": m["nodes_evaluated"],
            "seconds": {"data": round(t_data, 1), "method": round(t_method, 1),
                        "verify": round(t_verify, 1)},
            "verified": verdict.ok, "violations": list(verdict.violations)[:5]}


def result_name(case: str, system: str, small: bool) -> str:
    return f"icd10_{case}_{system}" + ("_small" if small else "")


def run_one(case: str, system: str, small: bool) -> dict:
    """One method on one system's data, measured by the harness in this process."""
    fn = globals()[f"case_{case}"]
    return run_benchmark(result_name(case, system, small), lambda: fn(system, small),
                         case=case, code_system=system, small=small, gem=str(GEM.name),
                         k=K, load_average_1min=os.getloadavg()[0])


def run_cases(cases, small: bool) -> None:
    """Each case's systems, one process each (ICD-9 first)."""
    for case in cases:
        for system in SYSTEMS:
            cmd = [sys.executable, "-m", "benchmarks.bench_icd10", "--one", case, system]
            subprocess.run(cmd + (["--small"] if small else []), check=True,
                           stdout=subprocess.DEVNULL)


# (case, row label, path to the figure, higher is better (None: not a release's utility,
#  no 20 % reading), path to the method's seconds, path to the verdict); paths are keys
#  into the case's figures
HEADLINES = (
    ("ugaclip", "UGACLIP DE-SynPUF: occurrences kept %",
     "synpuf_single-visit.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit.ugaclip.seconds", "synpuf_single-visit.ugaclip.verifier_ok"),
    ("ugaclip", "UGACLIP DE-SynPUF: utility constraints satisfied %",
     "synpuf_single-visit.ugaclip.utility_satisfied_pct", True, None, None),
    ("ugaclip", "PPE DE-SynPUF: privacy constraints", "synpuf_single-visit.ppe_constraints",
     None, "synpuf_single-visit.ppe_seconds", "synpuf_single-visit.ppe_verifier_ok"),
    ("ugaclip_bound", "Any release, DE-SynPUF level-1 policy: occurrences kept at most %",
     "kept_occurrences_pct_at_most", None, "bound.seconds", None),
    ("ugaclip_bound", "Bound run's plan (feasible, repaired): occurrences kept %",
     "plan.kept_occurrences_pct", None, None, "plan.feasible"),
    ("ugaclip_planned", "UGACLIP DE-SynPUF level-1, guided by its plan: occurrences kept %",
     "synpuf_single-visit_planned.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_planned.ugaclip.seconds",
     "synpuf_single-visit_planned.ugaclip.verifier_ok"),
    ("ugaclip_planned", ("UGACLIP DE-SynPUF level-1, guided by its occurrence plan: "
     "occurrences kept %"),
     "synpuf_single-visit_planned_occurrences.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_planned_occurrences.ugaclip.seconds",
     "synpuf_single-visit_planned_occurrences.ugaclip.verifier_ok"),
    ("ugaclip_realised", "UGACLIP DE-SynPUF level-1, realising its plan: occurrences kept %",
     "synpuf_single-visit_realised_codes.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_realised_codes.ugaclip.seconds",
     "synpuf_single-visit_realised_codes.ugaclip.verifier_ok"),
    ("ugaclip_realised", ("UGACLIP DE-SynPUF level-1, realising its occurrence plan: "
     "occurrences kept %"),
     "synpuf_single-visit_realised_occurrences.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_realised_occurrences.ugaclip.seconds",
     "synpuf_single-visit_realised_occurrences.ugaclip.verifier_ok"),
    ("ugaclip_realised", "the same release: distinct codes kept %",
     "synpuf_single-visit_realised_occurrences.ugaclip.kept_codes_pct", True, None, None),
    ("ugaclip_realised", "the same release: utility constraints satisfied %",
     "synpuf_single-visit_realised_occurrences.ugaclip.utility_satisfied_pct", True, None, None),
    ("ugaclip_realised_nodes", ("UGACLIP DE-SynPUF level-1, realising its occurrence plan "
     "under the node budget: occurrences kept %"),
     "synpuf_single-visit_realised_nodes.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_realised_nodes.ugaclip.seconds",
     "synpuf_single-visit_realised_nodes.ugaclip.verifier_ok"),
    ("ugaclip_realised_nodes", "the same release: distinct codes kept %",
     "synpuf_single-visit_realised_nodes.ugaclip.kept_codes_pct", True, None, None),
    ("ugaclip_realised_nodes", "the same release: utility constraints satisfied %",
     "synpuf_single-visit_realised_nodes.ugaclip.utility_satisfied_pct", True, None, None),
    ("ugaclip_clinical", "UGACLIP DE-SynPUF, CCS / CCSR policy: occurrences kept %",
     "synpuf_single-visit_clinical.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_clinical.ugaclip.seconds",
     "synpuf_single-visit_clinical.ugaclip.verifier_ok"),
    ("ugaclip_blocks", "UGACLIP DE-SynPUF, level-2 policy: occurrences kept %",
     "synpuf_single-visit_level2.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_level2.ugaclip.seconds",
     "synpuf_single-visit_level2.ugaclip.verifier_ok"),
    ("ugaclip_carried", ("UGACLIP DE-SynPUF, ICD-9's level-1 policy (carried into ICD-10-CM): "
     "occurrences kept %"),
     "synpuf_single-visit_carried.ugaclip.kept_occurrences_pct", True,
     "synpuf_single-visit_carried.ugaclip.seconds",
     "synpuf_single-visit_carried.ugaclip.verifier_ok"),
    ("ugaclip_carried", "the same release: distinct codes kept %",
     "synpuf_single-visit_carried.ugaclip.kept_codes_pct", True, None, None),
    ("ugaclip_carried", "the same release: utility constraints satisfied %",
     "synpuf_single-visit_carried.ugaclip.utility_satisfied_pct", True, None, None),
    ("ugaclip", "UGACLIP MEPS: occurrences kept %",
     "meps_single-visit.ugaclip.kept_occurrences_pct", True,
     "meps_single-visit.ugaclip.seconds", "meps_single-visit.ugaclip.verifier_ok"),
    ("disassociation", "Disassociation MEPS k5 m2: codes' MRE within 5 %",
     "meps_k5_m2.utility.default.mre_codes_share_in_5", True,
     "meps_k5_m2.anonymize_seconds", "meps_k5_m2.verifier_ok"),
    ("disassociation", "Disassociation MEPS k5 m2: ARE W1 (lower better)",
     "meps_k5_m2.utility.default.are_w1", False, None, None),
    ("disassociation", "Disassociation MEPS k5 m2: ARE on ICD-9's W1 queries (lower better)",
     "meps_k5_m2.utility.default.are_w1_icd9_queries", False, None, None),
    ("gccens", "GCCens k5 caps 3: CUL total mean (lower better)",
     "runs.0.cul_total_mean", False, "runs.0.gccens_plus_verify_seconds", "runs.0.verified"),
    ("gccens", "GCCens k25 caps 10: CUL total mean (lower better)",
     "runs.2.cul_total_mean", False, "runs.2.gccens_plus_verify_seconds", "runs.2.verified"),
    ("medco", "MedCo MEPS A=150, 3 clusters: released/real ratio (lower better)",
     "meps_a150_k3.real_ratio", False, "meps_a150_k3.generation_seconds",
     "meps_a150_k3.verdict_ok"),
    ("medco", "MedCo A=150, at most 3 clusters: least ratio of any clustering (bound)",
     "meps_a150_k3.least_ratio_any_clustering", None, None, None),
    ("medco", "MedCo on the least-ratio clusters: released/real ratio (lower better)",
     "meps_a150_k3.on_least_clusters.real_ratio", False,
     "meps_a150_k3.on_least_clusters.generation_seconds",
     "meps_a150_k3.on_least_clusters.verdict_ok"),
    ("medco", "MedCo, codes the map carries one-to-one: released/real ratio (lower better)",
     "meps_a150_k3_one_to_one.real_ratio", False,
     "meps_a150_k3_one_to_one.generation_seconds", "meps_a150_k3_one_to_one.verdict_ok"),
    ("hhp", "HHP 113k: information loss (lower better)", "information_loss", False,
     "seconds.method", "verified"),
    ("hhp", "HHP 113k: claims released %", "claims_released_pct", True, None, None),
)


def _at(obj, path: str | None):
    for key in (path.split(".") if path else []):
        if obj is None:
            return None
        obj = obj[int(key)] if isinstance(obj, list) else obj.get(key)
    return obj if path else None


def _fmt(x) -> str:
    return "–" if x is None else f"{x:,.4g}" if isinstance(x, float) else str(x)


def table(small: bool = False) -> str:
    """icd10.md's table from the result files of both systems."""
    rows = [("| figure | ICD-9 | ICD-10 | ratio | within 20 % | method s (9 → 10) "
             "| case wall s (9 → 10) | peak MB (9 → 10) | verifier (9 / 10) |"),
            "|---|---|---|---|---|---|---|---|---|"]
    for case, label, path, higher, secs, ok in HEADLINES:
        files = [RESULTS / f"{result_name(case, s, small)}.json" for s in SYSTEMS]
        if not all(f.is_file() for f in files):
            continue
        recs = [json.loads(f.read_text()) for f in files]
        nine, ten = (_at(r["figures"], path) for r in recs)
        ratio = ten / nine if nine else None
        holds = ("–" if higher is None or ratio is None else
                 "yes" if (ratio >= 1 - UTILITY_WITHIN if higher else
                           ratio <= 1 + UTILITY_WITHIN) else "**no**")
        method = " → ".join(_fmt(_at(r["figures"], secs)) for r in recs) if secs else ""
        wall = " → ".join(_fmt(r["wall_seconds"]) for r in recs)
        peak = " → ".join(_fmt(r["peak_memory_mb"]) for r in recs)
        verdict = " / ".join(_fmt(_at(r["figures"], ok)) for r in recs) if ok else ""
        rows.append(f"| {label} | {_fmt(nine)} | {_fmt(ten)} | "
                    f"{_fmt(None if ratio is None else round(ratio, 3))} | {holds} | {method} "
                    f"| {wall} | {peak} | {verdict} |")
    return "\n".join(rows)


def main() -> dict:
    return run_benchmark("icd10", figures, k=K, seed=SEED, patients=PATIENTS,
                         gem=str(GEM.name), must_keep=MUST_KEEP)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=CASES,
                        help="run this case on both systems (repeatable); default: LDA")
    parser.add_argument("--one", nargs=2, metavar=("CASE", "SYSTEM"),
                        help="run one case on one system in this process")
    parser.add_argument("--small", action="store_true", help="the ICD-9 benchmarks' small sizes")
    parser.add_argument("--table", action="store_true", help="print icd10.md's table")
    args = parser.parse_args()
    if args.one:
        run_one(args.one[0], args.one[1], args.small)
    elif args.case:
        run_cases(args.case, args.small)
    elif args.table:
        print(table(args.small))
    else:
        main()
