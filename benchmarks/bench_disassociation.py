"""Benchmark of DISASSOCIATION (Loukides et al. 2014) on real data.

``python -m benchmarks.bench_disassociation`` from the repository root:

- MEPS 2005 conditions (INFORMS; 26,854 records, 601 codes) with the level-1
  hierarchy policy, as in Figs. 13a and 18: k=5 m=2, k=10 m=2, k=5 m=3;
- BMS-WebView-1 (59,602 records, 497 items, no policy): k=5 m=2.

For each run: the anonymization's own wall time (targets: 10 s for MEPS m=2,
60 s for MEPS m=3 and BMS), the verifier's verdict and time, and utility on
datasets drawn by ``reconstruct`` (one per item-support mode): ARE on W2 (1000
queries of 1-2 codes) and W1 (frequent itemsets of 1-4 codes), and the MRE
histogram of the level-1 constraints (share in [-5%, 5%)).
"""

from __future__ import annotations

import gzip
import time

import numpy as np
import pandas as pd

from anonymizers.disassociation import DisassociationConfig, disassociate
from anonymizers.disassociation import metrics
from anonymizers.disassociation.reconstruct import ITEM_SUPPORT, reconstruct
from anonymizers.policies import hierarchy_policy, unplaced_codes
from anonymizers.verify.disassociation import verify_disassociation
from benchmarks.harness import DATASETS, run_benchmark

MEPS = DATASETS / "informs_meps2005" / "conditions05.csv.gz"
BMS = DATASETS / "transactions" / "BMS1.dat.gz"
RUNS = [("meps", 5, 2), ("meps", 10, 2), ("meps", 5, 3), ("bms", 5, 2)]


def load_meps(limit: int | None = None) -> pd.DataFrame:
    df = pd.read_csv(MEPS, dtype=str, usecols=["DUPERSID", "ICD9CODX"])
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})
    if limit:
        df = df[df["patient_id"].isin(df["patient_id"].unique()[:limit])]
    return df.reset_index(drop=True)


def load_bms(limit: int | None = None) -> pd.DataFrame:
    with gzip.open(BMS, "rt") as f:
        lines = [line.split() for line in f if line.strip()]
    lines = lines[:limit] if limit else lines
    return pd.DataFrame([(i, c) for i, items in enumerate(lines) for c in items],
                        columns=["patient_id", "code"])


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t0, 3)


def utility(data: pd.DataFrame, result, policy, seed: int) -> dict:
    original = metrics.as_records(data)
    rng = np.random.default_rng(seed)
    w2 = metrics.w2_workload(original, rng, n_queries=1000, sizes=(1, 2))
    # 0.1 % of the records, but at least 20 records (tiny inputs would make every
    # itemset of a long record frequent)
    support = max(0.1, 100 * 20 / original.n_records)
    w1 = metrics.w1_workload(original, rng, n_chains=250, max_size=4,
                             min_support_percent=support)
    out = {"w1_min_support_percent": support, "w1_queries": {c: len(q) for c, q in w1.items()}}
    for mode in ITEM_SUPPORT:
        drawn = metrics.as_records(reconstruct(result.release, seed=seed, item_support=mode))
        row = {"are_w2": metrics.are(original, drawn, w2),
               "are_w2_by_size": {s: metrics.are(original, drawn, [q for q in w2 if len(q) == s])
                                  for s in (1, 2)},
               "are_w1_by_size": {c: metrics.are(original, drawn, q) for c, q in w1.items()}}
        if policy:
            mre = metrics.mre(original, drawn, policy)
            row["mre_share_in_-5_5"] = metrics.share_within(mre)
            row["mre_histogram"] = metrics.mre_histogram(mre).set_index("interval")["share"] \
                .round(4).to_dict()
        out[mode] = row
    return out


def one_run(data: pd.DataFrame, k: int, m: int, policy) -> dict:
    cfg = DisassociationConfig(k, m, utility_policy=policy, seed=0)
    result, t_anon = timed(lambda: disassociate(data, cfg))
    verdict, t_verify = timed(lambda: verify_disassociation(data, result.to_json()))
    util, t_metrics = timed(lambda: utility(data, result, policy, seed=1))
    return {"k": k, "m": m, "anonymize_seconds": t_anon, "verify_seconds": t_verify,
            "metrics_seconds": t_metrics, "verifier_ok": verdict.ok,
            "verifier_checked_sets": verdict.checked,
            "verifier_violations": list(verdict.violations), "release": result.metrics,
            "utility": util}


def main(small: bool = False) -> dict:
    meps = load_meps(400 if small else None)
    bms = load_bms(600 if small else None)
    level1 = hierarchy_policy(meps["code"].unique(), 1)

    def figures():
        out = {"meps_unplaced_codes": unplaced_codes(meps["code"].unique(), level=1),
               "meps_level1_constraints": len(level1)}
        for name, k, m in RUNS[:1] + RUNS[-1:] if small else RUNS:
            data, policy = (meps, level1) if name == "meps" else (bms, None)
            out[f"{name}_k{k}_m{m}"] = one_run(data, k, m, policy)
        return out

    return run_benchmark("disassociation_small" if small else "disassociation", figures,
                         datasets={"meps": str(MEPS), "bms": str(BMS)},
                         small=small, paper="Loukides et al. 2014, Figs. 13a, 18")


if __name__ == "__main__":
    main()
