"""Benchmark: MedCo code clustering and dummy patients (seed 003) on MEPS 2005.

``python -m benchmarks.bench_medco`` from the repository root: INFORMS/MEPS
2005 conditions (DUPERSID -> patient, ICD9CODX -> code; 26,854 patients,
601 codes), minimum anonymity set 200, 2 clusters, both filling orders of
Fig. 7; every release is checked by the independent verifier.  ``--small``
runs the first 600 patients with an anonymity set of 20.
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from anonymizers.dummies import ClusterConfig, DummyConfig, cluster_codes, generate_dummies
from anonymizers.verify.dummies import verify_clusters, verify_dummies
from benchmarks.harness import DATASETS, run_benchmark

SOURCE = DATASETS / "informs_meps2005" / "conditions05.csv.gz"
SEED = 2005


def load(small: bool) -> pd.DataFrame:
    df = pd.read_csv(SOURCE, dtype=str, usecols=["DUPERSID", "ICD9CODX"], keep_default_na=False)
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})
    if small:
        df = df[df["patient_id"].isin(df["patient_id"].unique()[:600])]
    return df


def run(small: bool) -> dict:
    a, n_clusters = (20, 2) if small else (200, 2)
    t = time.perf_counter()
    df = load(small)
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    clustering = cluster_codes(df, ClusterConfig(min_anonymity_set=a, n_clusters=n_clusters))
    t_cluster = time.perf_counter() - t
    figures = {"patients": clustering.metrics["n_patients"], "codes": clustering.metrics["n_codes"],
               "min_anonymity_set": a, "clusters": clustering.metrics["cluster_sizes"],
               "clusters_verdict_ok": verify_clusters(df, clustering.clusters, a).ok,
               "load_seconds": round(t_load, 3), "clustering_seconds": round(t_cluster, 3)}
    for order in ("ascending", "descending"):
        figures[order] = _dummies(df, clustering.clusters, a, order)
    return figures


def _dummies(df: pd.DataFrame, clusters: list, a: int, order: str) -> dict:
    t = time.perf_counter()
    result = generate_dummies(df, clusters, DummyConfig(seed=SEED, fill_order=order))
    t_gen = time.perf_counter() - t
    t = time.perf_counter()
    verdict = verify_dummies(df, result.released, result.dummy_map, clusters, a)
    t_verify = time.perf_counter() - t
    m = result.metrics
    keep = ("n_dummies", "theoretical_ratio", "real_ratio", "released_over_real_patients",
            "real_patients_without_dummy", "water_filling_rounds", "cluster_levels",
            "collisions_detected", "repaired_by_reshuffle", "repaired_by_substitution",
            "repaired_by_search", "dropped_profile_full", "dropped_unrepaired", "slot_replacements")
    out = {k: round(m[k], 3) if isinstance(m[k], float) else m[k] for k in keep}
    out.update({"generation_seconds": round(t_gen, 3), "verify_seconds": round(t_verify, 3),
                "verdict_ok": verdict.ok, "violations": list(verdict.violations)})
    return out


def main(small: bool = False) -> dict:
    name = "medco_small" if small else "medco"
    return run_benchmark(name, lambda: run(small), dataset=str(SOURCE.name), seed=SEED,
                         method="MedCo clustering + water-filling dummies (seed 003)")


if __name__ == "__main__":
    main(small="--small" in sys.argv[1:])
