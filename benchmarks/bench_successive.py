"""Benchmark: successive releases of overlapping cohorts (issue 25).

The MEPS pair: two cohorts of 3,000 persons of INFORMS/MEPS 2005 conditions
(``informs_meps2005/conditions05.csv.gz``; DUPERSID -> patient, ICD9CODX ->
code) sharing 2,700 of them: 300 left and 300 arrived between the runs, and
10% of the persisting persons gained one code (it is missing from the first
cohort).  Per method, the second release is made without the defence
(an independent run, as every scheduled run is today) and with it, and both
are judged against the first by the independent cross-release verifier
(``anonymizers.successive.check``) and attacked by the harness
(``anonymizers.successive``); utility is reported beside.

- disassociation, k=5, m=2: stable clusters with retention;
- UGACLIP, k=5 (PPE all-visits, hierarchy level-2 utility policy):
  append-only publication; the adversary knows a privacy constraint;
- GCCens, k=5 (repeated codes, caps from the sample) against the population
  of all 26,854 MEPS persons: union-safe release;
- LDA, k=5: MEPS carries no ages, so LDA runs on a generated pair (1,000
  patients, 900 shared, codes of 30 ICD-9 categories, ages 20-84).

``--small`` runs 600-person cohorts (540 shared).
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from anonymizers.censoring import GCCensConfig
from anonymizers.cli.lda import release_json
from anonymizers.disassociation import DisassociationConfig
from anonymizers.io import read_table
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.successive import disassociation as dis
from anonymizers.successive import gccens as gcc
from anonymizers.successive import kanon
from anonymizers.successive.check import breaches
from anonymizers.successive.harness import overlapping_cohorts, random_pool
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from benchmarks.bench_disassociation import DRAWS, Workloads, _mean
from benchmarks.harness import DATASETS, run_benchmark

K, M, SEED, GAIN = 5, 2, 25, 0.1
SIZES = {"full": (3000, 2700), "small": (600, 540)}


def load_meps() -> pd.DataFrame:
    df = read_table(DATASETS / "informs_meps2005" / "conditions05.csv.gz",
                    ["DUPERSID", "ICD9CODX"])
    return df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t, 3)


def judged(method, history, new, params) -> dict:
    found, seconds = timed(lambda: breaches(method, history, new, params))
    return {"check_breached_sets": len(found), "check_seconds": seconds}


def attacked(fn) -> dict:
    report, seconds = timed(fn)
    extra = {key: report[key] for key in ("records_fitting_several_clusters", "pseudonym_links")
             if key in report}
    return {"attack_targets": report["targets"],
            "attack_targets_breached": report["targets_breached"],
            "attack_seconds": seconds, **extra}


def dis_utility(release: dict, own: pd.DataFrame, current: Workloads) -> dict:
    """W1/W2 ARE and MRE shares (single codes; ICD-9 level-1 groups) of the
    release's seeded reconstructions (the library's default rules, mean over
    ``DRAWS``), read twice: against the records the release was made from
    (``own_*``: the paper's reading, retained records included) and against
    the current cohort (``current_*``, the same workload for both releases:
    what an analyst of today's members gets, retained records counted as
    the noise they are to that analyst)."""
    from anonymizers.disassociation.reconstruct import reconstruct
    from anonymizers.disassociation.release import Disassociated

    doc = Disassociated.from_json(release)
    drawn = [reconstruct(doc, seed=s) for s in DRAWS]
    out = {}
    for label, work in (("own", _workloads(own)), ("current", current)):
        figures = _mean([work.measure(d) for d in drawn])
        out.update({f"{label}_{key}": round(v, 4) for key, v in figures.items()
                    if key in UTILITY and v is not None})
    return out


UTILITY = ("are_w1", "are_w2", "mre_single_codes_share_in_5", "mre_single_codes_share_in_2.5",
           "mre_icd9_level1_share_in_5")


def _workloads(records: pd.DataFrame) -> Workloads:
    codes = sorted(records["code"].astype(str).unique())
    return Workloads(records, {"single_codes": [[c] for c in codes],
                               "icd9_level1": hierarchy_policy(codes, 1)}, seed=SEED)


def disassociation_case(cohorts) -> dict:
    config = DisassociationConfig(k=K, m=M, seed=SEED)
    first = dis.release(cohorts.first, config)
    current = _workloads(cohorts.second)
    out = {}
    for label, make in (("off", lambda: dis.release(cohorts.second, config)),
                        ("on", lambda: dis.release_stable(cohorts.second, config, first))):
        second, seconds = timed(make)
        m = second.metrics
        out[label] = {
            "release_seconds": seconds, "n_records": m["n_records"],
            "n_clusters": m["n_clusters"], "cluster_size_mean": round(m["cluster_size_mean"], 2),
            "item_chunk_occurrence_share": round(m["item_chunk_occurrence_share"], 4),
            "codes_with_exact_support": m["codes_with_exact_support"],
            "retained_left": m.get("retained_left", 0), "held_back": m.get("held_back", 0),
            **dis_utility(second.release, second.records, current),
            **kanon.coverage(cohorts.second, [second.records]),
            **judged("disassociation", [first.tables()], second.tables(), {"k": K, "m": M}),
            **attacked(lambda s=second: dis.attack([first.release, s.release],
                                                   [first.records, s.records]))}
    return out


def ugaclip_case(cohorts) -> dict:
    def run(records):
        policy = [list(c) for c in extract_policy(records, PPEConfig(K)).constraints]
        utility = hierarchy_policy(sorted(records["code"].unique()), 2)
        result = ugaclip(records, policy, utility, UGACLIPConfig(K, seed=SEED))
        return result, policy

    (first, p1), _ = timed(lambda: run(cohorts.first))
    delta, held = kanon.new_patients(cohorts.second, set(cohorts.first["patient_id"]), K)
    out = {}
    for label, records, published in (("off", cohorts.second, [cohorts.second]),
                                      ("on", delta, [cohorts.first, delta])):
        (second, p2), seconds = timed(lambda r=records: run(r))
        m = second.metrics
        doc1, doc2 = first.to_dict(), second.to_dict()
        constraints = p1 + p2
        out[label] = {
            "release_seconds": seconds, "n_records": m["n_records"], "held_back": held * (
                label == "on"),
            "utility_constraints_satisfied": m["utility_constraints"]["n_satisfied"],
            "utility_constraints_present": m["utility_constraints"]["n_present"],
            "suppressed_occurrences": m["suppressed_occurrences"],
            "suppressed_share": round(m["suppressed_occurrences"] / len(records), 4),
            "il_log10_total": m.get("il_log10_total"),
            **kanon.coverage(cohorts.second, published),
            **judged("ugaclip", [{"release": doc1, "truth": cohorts.first}],
                     {"release": doc2, "truth": records}, {"k": K, "constraints": constraints}),
            **attacked(lambda d1=doc1, d=doc2, r=records, c=constraints: kanon.attack_ugaclip(
                [d1, d], [cohorts.first, r], constraints=c))}
    return out


def gccens_case(cohorts, population) -> dict:
    config = GCCensConfig(k=K, caps=None, seed=SEED)
    first = gcc.release(cohorts.first, population, config)
    out = {}
    for label, safe in (("off", False), ("on", True)):
        second, seconds = timed(lambda s=safe: gcc.release(cohorts.second, population, config,
                                                           first, union_safe=s))
        m = second.release["metrics"]
        out[label] = {
            "release_seconds": seconds, "n_records": m["n_records"],
            "records_narrowed": second.narrowed, "cul_mean_before_narrowing": m["cul_mean"],
            "released_instance_share": round(gcc.released_share(second.release,
                                                                cohorts.second), 4),
            **judged("gccens", [first.tables()], second.tables(population), {"k": K}),
            **attacked(lambda s=second: gcc.attack([first.release, s.release],
                                                   [first.key, s.key], population=population))}
    return out


def lda_case(n: int, shared: int) -> dict:
    pool = random_pool(3 * n, 30, seed=SEED, max_codes=4, ages=True)
    cohorts = overlapping_cohorts(pool, n, shared, seed=SEED, gain=GAIN)

    def run(records):
        result = lda(records, LDAConfig(k=K, seed=SEED))
        return release_json(result), result.pseudonym_map

    first = run(cohorts.first)
    delta, held = kanon.new_patients(cohorts.second, set(cohorts.first["patient_id"]), K)
    out = {}
    for label, records, published in (("off", cohorts.second, [cohorts.second]),
                                      ("on", delta, [cohorts.first, delta])):
        (doc, pmap), seconds = timed(lambda r=records: run(r))
        m = doc["metrics"]
        out[label] = {
            "release_seconds": seconds, "n_records": len(doc["records"]),
            "ilm": m["ilm"], "suppressed_pairs": m["suppressed_pairs"], "n_pairs": m["n_pairs"],
            "held_back": held * (label == "on"),
            **kanon.coverage(cohorts.second, published),
            **judged("lda", [{"release": first[0], "truth": cohorts.first, "map": first[1]}],
                     {"release": doc, "truth": records, "map": pmap}, {"k": K}),
            **attacked(lambda d=doc, r=records, p=pmap: kanon.attack_lda(
                [first[0], d], [cohorts.first, r], maps=[first[1], p]))}
    return {"dataset": f"generated: {n} patients per release, {shared} shared", **out}


def main(small: bool = False) -> dict:
    n, shared = SIZES["small" if small else "full"]
    meps = load_meps()

    def figures() -> dict:
        multisets = overlapping_cohorts(meps, n, shared, seed=SEED, gain=GAIN)
        sets = overlapping_cohorts(meps.drop_duplicates(), n, shared, seed=SEED, gain=GAIN)
        return {"cohorts": {"n": n, "shared": shared, "gain": GAIN, "seed": SEED},
                "disassociation": disassociation_case(sets),
                "ugaclip": ugaclip_case(sets),
                "gccens": gccens_case(multisets, meps),
                "lda": lda_case(1000 if not small else 300, 900 if not small else 270)}

    name = "successive_small" if small else "successive"
    return run_benchmark(name, figures, dataset="informs_meps2005 (+ generated for LDA)",
                         k=K, m=M, seed=SEED, small=small)


if __name__ == "__main__":
    main(small="--small" in sys.argv)
