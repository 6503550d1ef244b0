"""Benchmark of LDA (Tamersoy 2011, Chapter IV): A-GS against Baseline.

1. "d50_synthetic", a D_50^Pop-like cohort (Table 3: 9.32 (ICD, Age) pairs,
   5.88 distinct codes and 3.10 distinct ages per trajectory, 50 codes) from
   the project's claims generator: ``SyntheticConfig(n_members=6,000,
   seed=2011, claims_per_member=12)`` (other parameters at their defaults,
   2,000 codes), turned into trajectories by
   ``anonymizers.synthetic_views.trajectories``: distinct (code, age) pairs
   of every member's claims, age at ``clm_from_dt`` from ``bene_birth_dt``,
   restricted to the 50 codes held by the most members, the first 5,000
   members with a pair, each keeping a seeded random subset of its codes so
   that the mean is about 9.32 pairs.  claims_per_member was chosen (grid
   3-23.6 on this seed) to bring codes and ages per trajectory near Table 3;
   the generator's service dates span three years, so a trajectory has at
   most four distinct ages.  The realised figures are reported under "data".
   The thesis' data (Vanderbilt's Synthetic Derivative) is not public.
2. The DE-SynPUF TestB subset: the 485 beneficiaries of the 2010 summary
   file, one (code, age) pair per distinct diagnosis code of each inpatient,
   outpatient and carrier claim (ICD9_DGNS_CD_*), age at CLM_FROM_DT from
   BENE_BIRTH_DT, the claim date as service_date.

k = 5, w_icd = w_age = 0.5; the verifier runs on every release.
``python -m benchmarks.bench_lda`` from the repository root.
"""

from __future__ import annotations

import time

import pandas as pd

from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.synthetic import SyntheticConfig
from anonymizers.synthetic_views import trajectories
from anonymizers.verify.longitudinal import verify_lda
from benchmarks.harness import DATASETS, RESULTS, run_benchmark  # noqa: F401 (RESULTS for tests)

K = 5
SEED = 2011
D50 = {"n_codes": 50, "pairs_per_member": 9.32}
GENERATOR = {"claims_per_member": 12.0}
SIZES = {False: (5_000, 6_000), True: (300, 400)}  # small -> (trajectories, members)
SYNPUF = DATASETS / "synpuf" / "cms_bfd_sample_testB"
CLAIMS = (("Inpatient_Claims_Sample_TestB", 10), ("Outpatient_Claims_Sample_TestB", 10),
          ("Carrier_Claims_Sample_TestBA", 8))


def d50_synthetic(n_patients: int, n_members: int, seed: int = SEED) -> pd.DataFrame:
    """D_50^Pop-like pairs from the claims generator (module doc, item 1)."""
    config = SyntheticConfig(n_members=n_members, seed=seed, **GENERATOR)
    return trajectories(config, n_patients=n_patients, seed=seed, **D50)


def synpuf_pairs(limit: int | None = None) -> pd.DataFrame:
    """(code, age) pairs of the TestB beneficiaries of 2010 (see module doc)."""
    bene = pd.read_csv(SYNPUF / "DE1_0_2010_Beneficiary_Summary_File_Sample_TestB.csv.gz",
                       dtype=str, usecols=["DESYNPUF_ID", "BENE_BIRTH_DT"])
    if limit:
        bene = bene.head(limit)
    frames = []
    for name, n_codes in CLAIMS:
        cols = [f"ICD9_DGNS_CD_{i}" for i in range(1, n_codes + 1)]
        claims = pd.read_csv(SYNPUF / f"DE1_0_2008_to_2010_{name}.csv.gz", dtype=str,
                             usecols=["DESYNPUF_ID", "CLM_ID", "CLM_FROM_DT", *cols])
        long = claims.melt(id_vars=["DESYNPUF_ID", "CLM_ID", "CLM_FROM_DT"], value_vars=cols,
                           value_name="code").dropna(subset=["code", "CLM_FROM_DT"])
        frames.append(long.drop(columns="variable"))
    pairs = pd.concat(frames).drop_duplicates(["DESYNPUF_ID", "CLM_ID", "code"])
    pairs = pairs.merge(bene, on="DESYNPUF_ID")
    born = pd.to_datetime(pairs["BENE_BIRTH_DT"], format="%Y%m%d")
    seen = pd.to_datetime(pairs["CLM_FROM_DT"], format="%Y%m%d")
    before_birthday = (seen.dt.month * 100 + seen.dt.day) < (born.dt.month * 100 + born.dt.day)
    age = seen.dt.year - born.dt.year - before_birthday.astype(int)
    return pd.DataFrame({"patient_id": pairs["DESYNPUF_ID"].to_numpy(),
                         "code": pairs["code"].to_numpy(), "age": age.to_numpy(),
                         "service_date": pairs["CLM_FROM_DT"].to_numpy()})


def describe(pairs: pd.DataFrame) -> dict:
    per = pairs.groupby("patient_id")
    return {"patients": int(pairs["patient_id"].nunique()), "pairs": len(pairs),
            "distinct_pairs": len(pairs[["code", "age"]].drop_duplicates()),
            "distinct_codes": int(pairs["code"].nunique()),
            "distinct_ages": int(pairs["age"].nunique()),
            "avg_pairs_per_t": round(float(per.size().mean()), 2),
            "max_pairs_per_t": int(per.size().max()),
            "avg_codes_per_t": round(float(per["code"].nunique().mean()), 2),
            "avg_ages_per_t": round(float(per["age"].nunique().mean()), 2)}


def anonymize(pairs: pd.DataFrame, alignment: str, k: int = K) -> dict:
    """One LDA run with its verdict and time."""
    t0 = time.perf_counter()
    result = lda(pairs, LDAConfig(k=k, alignment=alignment, seed=SEED))
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_lda(result.records, result.pseudonym_map, pairs, k)
    verify_seconds = time.perf_counter() - t0
    keep = ("ilm", "alm", "avg_re", "n_queries", "n_clusters", "min_cluster_size",
            "max_cluster_size", "suppressed_pairs", "released_pairs", "unknown_codes",
            "n_alignments",
            "icd_levels", "age_levels")
    return {"seconds": round(seconds, 2), "verify_seconds": round(verify_seconds, 2),
            "verifier_ok": verdict.ok,
            "violations": list(verdict.violations[:3]),
            **{key: result.metrics[key] for key in keep}}


def figures(small: bool = False) -> dict:
    out = {}
    t0 = time.perf_counter()
    d50 = d50_synthetic(*SIZES[small])
    data_seconds = round(time.perf_counter() - t0, 2)
    out["d50_synthetic"] = {"data": {**describe(d50), "data_seconds": data_seconds},
                            "a-gs": anonymize(d50, "a-gs"),
                            "baseline": anonymize(d50, "baseline")}
    if SYNPUF.is_dir():
        syn = synpuf_pairs(limit=40 if small else None)
        out["synpuf_testB"] = {"data": describe(syn), "a-gs": anonymize(syn, "a-gs"),
                               "baseline": anonymize(syn, "baseline")}
    else:
        out["synpuf_testB"] = f"skipped: {SYNPUF} not found"
    return out


def main(small: bool = False) -> dict:
    n_patients, n_members = SIZES[small]
    return run_benchmark("lda_small" if small else "lda", lambda: figures(small),
                         k=K, w_icd=0.5, w_age=0.5, seed=SEED,
                         note="d50_synthetic: anonymizers.synthetic SyntheticConfig(n_members="
                              f"{n_members}, seed={SEED}, {GENERATOR}) -> "
                              f"synthetic_views.trajectories({D50}, n_patients="
                              f"{n_patients})")


if __name__ == "__main__":
    main()
