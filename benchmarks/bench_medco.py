"""Benchmark: MedCo code clustering and dummy patients (seed 003).

``python -m benchmarks.bench_medco`` from the repository root.  Cases, each
checked by the independent verifier (``anonymizers.verify.dummies``):

- ``meps_a150_k3`` / ``meps_a200_k2``: INFORMS/MEPS 2005 conditions
  (DUPERSID -> patient, ICD9CODX -> code; 26,854 patients, 601 codes),
  clustered with the CLI's defaults (Jaccard HAC cut 0.5, complete linkage)
  at minimum anonymity set 150 with 3 clusters and 200 with 2, with the
  library's default frequency step, least-ratio (every clustered case uses
  it); ``..._ward`` the same with Ward's (``ClusterConfig.frequency_step``,
  docs/methods/medco.md#dummies-clustering);
- ``meps_code_ranges_a150``: the same data with clusters "from another
  tool": codes in code order cut into ranges of at least 150 (ICD-9
  chapter-like), so clusters mix frequencies and patients span them;
- ``demo``: the demo warehouse's claims generated in-process
  (``anonymizers.synthetic``, 3,000 members, seed 2008, as
  ``python -m tools.demo_data``), diagnosis codes per member as
  sql/extract_claims.sql takes them, with the medco_codes release's
  parameters (A = 20, as many clusters as A allows, seed 20081).  HHP
  screening is not applied (it needs the warehouse);
- ``demo_merged``: the same with section 4's merging of clusters whose
  filling overflows each other (``ClusterConfig.merge_overflowing``, off
  in the release);
- ``demo_n_clusters_5``: the same claims with 5 frequency clusters instead
  of the release's "as many as A allows" (100): a parameter the release
  owner could choose, measured to show what reaches the theoretical ratio.

Every case also reports lower bounds on the real ratio of *any* release
on its clusters (``anonymizers.dummies.bounds``): ``ratio_bound_profiles`` when
dummies keep a real patient's codes per cluster (3.2), with every real
patient duplicated (``..._duplicated``) or not, and ``..._any_profile``
when a dummy keeps only its source's number of codes (3.1).

Ratio (Fig. 7): released code occurrences over real ones ("how much the
database with dummies is larger"; the theoretical ratio is the area of the
flattened histogram over the real one).  Dummies per real patient are
reported beside it.  ``--small`` runs 600 MEPS patients with A = 20.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from anonymizers.dummies import ClusterConfig, DummyConfig, cluster_codes, generate_dummies
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.verify.dummies import verify_clusters, verify_dummies
from benchmarks.harness import DATASETS, run_benchmark

SOURCE = DATASETS / "informs_meps2005" / "conditions05.csv.gz"
SEED = 2005
DEMO = {"n_members": 3000, "seed": 2008, "min_anonymity_set": 20, "dummy_seed": 20081}
CMS_PLACEHOLDERS = {"OTHER", "XX000"}


def load(small: bool) -> pd.DataFrame:
    df = pd.read_csv(SOURCE, dtype=str, usecols=["DUPERSID", "ICD9CODX"], keep_default_na=False)
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})
    if small:
        df = df[df["patient_id"].isin(df["patient_id"].unique()[:600])]
    return df


def demo_claims() -> pd.DataFrame:
    """Distinct (member, diagnosis code) of the demo warehouse's synthetic claims."""
    parts = []
    for chunk in generate(SyntheticConfig(n_members=DEMO["n_members"], seed=DEMO["seed"])):
        for name, frame in chunk.items():
            if name.endswith("_claims"):
                cols = [c for c in frame.columns if "icd9_dgns_cd" in c]
                parts.append(frame[["desynpuf_id"] + cols].melt(id_vars="desynpuf_id")
                             [["desynpuf_id", "value"]])
    df = pd.concat(parts).dropna().set_axis(["patient_id", "code"], axis=1)
    df = df[(df["code"] != "") & ~df["code"].isin(CMS_PLACEHOLDERS)]
    return df.drop_duplicates(ignore_index=True)


def code_ranges(df: pd.DataFrame, a: int) -> list[list[str]]:
    """Codes in code order cut into len // a ranges of at least ``a`` codes."""
    codes = np.array(sorted(set(df["code"])), dtype=object)
    return [part.tolist() for part in np.array_split(codes, max(1, len(codes) // a))]


def case(df: pd.DataFrame, clusters: list, a: int, seed: int, clustering: dict | None) -> dict:
    t = time.perf_counter()
    result = generate_dummies(df, clusters, DummyConfig(seed=seed))
    t_gen = time.perf_counter() - t
    t = time.perf_counter()
    verdict = verify_dummies(df, result.released, result.dummy_map, clusters, a)
    t_verify = time.perf_counter() - t
    m = result.metrics
    keep = ("n_real_patients", "n_dummies", "theoretical_ratio", "real_ratio", "planned_ratio",
            "plan_optimal", "dummies_per_real_patient", "released_over_real_patients",
            "real_patients_without_dummy", "route", "water_filling_rounds", "cluster_levels",
            "collisions_detected", "repaired_by_reshuffle", "repaired_by_substitution",
            "repaired_by_search", "dropped_profile_full", "dropped_unrepaired",
            "dropped_unrealisable", "ryser_fallbacks", "profiles_closed",
            "ratio_bound_profiles", "ratio_bound_profiles_duplicated", "ratio_bound_any_profile")
    out = {k: round(m[k], 3) if isinstance(m[k], float) else m[k] for k in keep}
    out["real_over_theoretical"] = round(m["real_ratio"] / m["theoretical_ratio"], 4)
    out["within_10pct_of_theoretical"] = bool(m["real_ratio"] <= 1.10 * m["theoretical_ratio"])
    out.update({"min_anonymity_set": a, "cluster_sizes": [len(c) for c in clusters],
                "clusters_verdict_ok": verify_clusters(df, clusters, a).ok,
                "generation_seconds": round(t_gen, 3), "verify_seconds": round(t_verify, 3),
                "verdict_ok": verdict.ok, "violations": list(verdict.violations)})
    if clustering:
        out["clustering"] = clustering
    return out


def clustered(df: pd.DataFrame, a: int, n_clusters: int | None, seed: int,
              merge: bool = False, frequency_step: str | None = None) -> dict:
    """``frequency_step=None``: ClusterConfig's default (the step the library releases with)."""
    t = time.perf_counter()
    step = {} if frequency_step is None else {"frequency_step": frequency_step}
    result = cluster_codes(df, ClusterConfig(min_anonymity_set=a, n_clusters=n_clusters,
                                             merge_overflowing=merge, **step))
    m = result.metrics
    info = {"n_clusters_requested": n_clusters, "seconds": round(time.perf_counter() - t, 3),
            "frequency_step": m["frequency_step"],
            "codes_moved_for_anonymity_set": m["codes_moved_for_anonymity_set"],
            "correlated_groups": m["correlated_groups"], "merge_overflowing": merge,
            "clusters_merged_section4": m["clusters_merged_section4"],
            "theoretical_ratio_before_merging": round(m["theoretical_ratio_before_merging"], 3)}
    return case(df, result.clusters, a, seed, info)


def run(small: bool) -> dict:
    df = load(small)
    figures = {"patients": int(df["patient_id"].nunique()), "codes": int(df["code"].nunique())}
    if small:
        figures["meps_a20_k2"] = clustered(df, 20, 2, SEED)
        return figures
    for a, k in ((150, 3), (200, 2)):
        figures[f"meps_a{a}_k{k}"] = clustered(df, a, k, SEED)
        figures[f"meps_a{a}_k{k}_ward"] = clustered(df, a, k, SEED, frequency_step="ward")
    figures["meps_code_ranges_a150"] = case(df, code_ranges(df, 150), 150, SEED, None)
    demo = demo_claims()
    figures["demo"] = {"members": DEMO["n_members"], "generator_seed": DEMO["seed"],
                       "patients": int(demo["patient_id"].nunique()),
                       "codes": int(demo["code"].nunique()),
                       **clustered(demo, DEMO["min_anonymity_set"], None, DEMO["dummy_seed"])}
    figures["demo_merged"] = clustered(demo, DEMO["min_anonymity_set"], None, DEMO["dummy_seed"],
                                       merge=True)
    figures["demo_n_clusters_5"] = clustered(demo, DEMO["min_anonymity_set"], 5,
                                             DEMO["dummy_seed"])
    return figures


def main(small: bool = False) -> dict:
    name = "medco_small" if small else "medco"
    return run_benchmark(name, lambda: run(small), dataset=str(SOURCE.name), seed=SEED,
                         method="MedCo clustering + jointly planned water-filling dummies (seed 003)")


if __name__ == "__main__":
    main(small="--small" in sys.argv[1:])
