"""Benchmark of LDA (Tamersoy 2011, Chapter IV): A-GS against Baseline.

1. A D_50^Pop-like cohort (Table 3): 5,000 trajectories, about 9.3 (ICD, Age)
   pairs each, 50 distinct ICD-9 codes, about 5.9 distinct codes and 3.1
   distinct ages per trajectory.  The thesis' data (Vanderbilt's Synthetic
   Derivative) is not public, so ``d50_like`` builds it with a small seeded
   generator following Table 3; swap in ``anonymizers.synthetic`` when it
   exists.
2. The DE-SynPUF TestB subset: the 485 beneficiaries of the 2010 summary
   file, one (code, age) pair per distinct diagnosis code of each inpatient,
   outpatient and carrier claim (ICD9_DGNS_CD_*), age at CLM_FROM_DT from
   BENE_BIRTH_DT, the claim date as service_date.

k = 5, w_icd = w_age = 0.5; the verifier runs on every release.
``python -m benchmarks.bench_lda`` from the repository root.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.verify.longitudinal import verify_lda
from benchmarks.harness import DATASETS, RESULTS, run_benchmark  # noqa: F401 (RESULTS for tests)

K = 5
SEED = 2011
D50_CODES = ("401.9 272.4 250.00 724.2 530.81 786.50 427.31 780.79 414.01 244.9 311 272.0 "
             "786.05 719.46 729.5 278.00 477.9 401.1 496 493.90 585.9 428.0 786.2 789.00 "
             "780.4 724.5 473.9 466.0 465.9 599.0 300.00 327.23 715.90 733.00 346.90 625.9 "
             "611.72 788.1 782.1 786.09 729.1 285.9 280.9 719.41 462 461.9 564.00 787.91 "
             "V70.0 V76.12").split()
SYNPUF = DATASETS / "synpuf" / "cms_bfd_sample_testB"
CLAIMS = (("Inpatient_Claims_Sample_TestB", 10), ("Outpatient_Claims_Sample_TestB", 10),
          ("Carrier_Claims_Sample_TestBA", 8))


def d50_like(n: int, seed: int = SEED) -> pd.DataFrame:
    """Seeded D_50^Pop-like pairs: Zipf-popular codes, each seen at a random
    non-empty subset of the patient's 1 + Poisson(2.1) consecutive-ish ages."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, len(D50_CODES) + 1)
    pop /= pop.sum()
    rows = []
    for p in range(n):
        first = int(np.clip(rng.normal(52, 17), 1, 100))
        steps = 1 + rng.geometric(0.6, size=rng.poisson(2.1))
        ages = np.minimum(first + np.concatenate([[0], np.cumsum(steps)]), 128)
        ages = np.unique(ages)
        n_codes = min(len(D50_CODES), 1 + rng.poisson(4.9))
        for code in rng.choice(len(D50_CODES), n_codes, replace=False, p=pop):
            at = rng.choice(ages, 1 + rng.binomial(len(ages) - 1, 0.28), replace=False)
            rows += [(f"p{p}", D50_CODES[code], int(a)) for a in at]
    return pd.DataFrame(rows, columns=["patient_id", "code", "age"])


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
    return {"patients": int(pairs["patient_id"].nunique()), "pairs": int(len(pairs)),
            "distinct_pairs": int(len(pairs[["code", "age"]].drop_duplicates())),
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
    d50 = d50_like(300 if small else 5000)
    out["d50_like"] = {"data": describe(d50), "a-gs": anonymize(d50, "a-gs"),
                       "baseline": anonymize(d50, "baseline")}
    if SYNPUF.is_dir():
        syn = synpuf_pairs(limit=40 if small else None)
        out["synpuf_testB"] = {"data": describe(syn), "a-gs": anonymize(syn, "a-gs"),
                               "baseline": anonymize(syn, "baseline")}
    else:
        out["synpuf_testB"] = f"skipped: {SYNPUF} not found"
    return out


def main(small: bool = False) -> dict:
    return run_benchmark("lda_small" if small else "lda", lambda: figures(small),
                         k=K, w_icd=0.5, w_age=0.5, seed=SEED,
                         note="D50-like data from the seeded generator d50_like (Table 3)")


if __name__ == "__main__":
    main()
