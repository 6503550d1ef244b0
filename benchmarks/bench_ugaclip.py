"""Benchmark PPE + UGACLIP (Loukides et al., PNAS 2010, SI Algorithms 1-2) on
the MEPS 2005 conditions file.

Run from the repository root: ``python -m benchmarks.bench_ugaclip``.

Data: ``informs_meps2005/conditions05.csv.gz``, DUPERSID -> patient,
ICD9CODX -> code (26,854 patients, 601 three-digit codes plus -1/-9).
PPE extracts the privacy policy with the all-visits filter and k=5; UGACLIP
anonymizes with k=5; the independent verifier checks the release.

Utility policy: ``anonymizers.policies.hierarchy_policy(codes, 1)``, the
level-1 hierarchy policy of seed 001 Section 6.1 (one constraint per
3-digit category).  MEPS codes are themselves 3-digit categories, so at
level 1 every constraint holds a single code and UGACLIP can only suppress
(or group -1 and -9, which no constraint holds).  The benchmark therefore also
runs level 2 (one constraint per ICD-9 section), where generalization has
room to work; both are reported.
"""

from __future__ import annotations

import time

from anonymizers.io import read_table
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.ugaclip import verify_release
from benchmarks.harness import DATASETS, run_benchmark

K = 5
SMALL_PATIENTS = 400


def load(small: bool):
    df = read_table(DATASETS / "informs_meps2005" / "conditions05.csv.gz",
                    ["DUPERSID", "ICD9CODX"])
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})
    if small:
        keep = df["patient_id"].drop_duplicates().iloc[:SMALL_PATIENTS]
        df = df[df["patient_id"].isin(keep)]
    return df.reset_index(drop=True)


def one_run(df, policy, level: int) -> dict:
    utility = hierarchy_policy(sorted(df["code"].unique()), level)
    t0 = time.perf_counter()
    result = ugaclip(df, policy.constraints, utility, UGACLIPConfig(K, seed=0))
    t_ugaclip = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_release(df, result.to_dict(), policy.constraints, K)
    t_verify = time.perf_counter() - t0
    m = result.metrics
    return {"utility_policy": f"hierarchy level {level}", "n_utility_constraints": len(utility),
            "ugaclip_seconds": round(t_ugaclip, 3), "verify_seconds": round(t_verify, 3),
            "verifier_ok": verdict.ok, "verifier_violations": list(verdict.violations[:3]),
            "il_total": m["il_total"],
            "il_log10_max": max((r["log10_il"] for r in m["il_items"]), default=None),
            "n_items": m["n_items"], "n_generalized_items": m["n_generalized_items"],
            "largest_item": m["largest_item"],
            "suppressed_codes": m["suppressed_codes"],
            "suppressed_occurrences": m["suppressed_occurrences"],
            "privacy_constraints": m["privacy_constraints"],
            "utility_satisfied": m["utility_constraints"]["n_satisfied"],
            "utility_present": m["utility_constraints"]["n_present"],
            "relative_error": m["relative_error"], "unplaced_codes": m["unplaced_codes"],
            "steps": m["steps"]}


def main(small: bool = False) -> dict:
    df = load(small)

    def figures() -> dict:
        t0 = time.perf_counter()
        policy = extract_policy(df, PPEConfig(K, "all-visits"))
        t_ppe = time.perf_counter() - t0
        n_rows = len(df)
        return {"n_rows": n_rows, "n_patients": policy.metrics["n_patients"],
                "n_codes": policy.metrics["n_codes"], "ppe_seconds": round(t_ppe, 3),
                "ppe_constraints": policy.metrics["n_constraints"],
                "ppe_max_constraint_size": policy.metrics["max_constraint_size"],
                "level1": one_run(df, policy, 1), "level2": one_run(df, policy, 2)}

    name = "ugaclip_small" if small else "ugaclip"
    return run_benchmark(name, figures, dataset="informs_meps2005/conditions05.csv.gz", k=K,
                         filter="all-visits", small=small)


if __name__ == "__main__":
    main()
