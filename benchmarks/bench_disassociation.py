"""Benchmark of DISASSOCIATION (Loukides et al. 2014) on real data.

``python -m benchmarks.bench_disassociation`` from the repository root:

- MEPS 2005 conditions (INFORMS; 26,854 records, 601 three-digit codes) with
  the level-1 hierarchy policy, as in Section 6 (the CLI's other defaults:
  maxClusterSize 2k, refining over one window, the whole dataset):
  k in {2, 5, 10, 25} with m = 2 (Figs. 17, 18, 21), k = 5 with m = 3;
  k = 5 also with the level-2 (section) policy, and with refine windows of
  256 and 1024 clusters (the trade-off of ``refine_window``);
- BMS-WebView-1 (59,602 records, 497 items, no policy): k = 5, m = 2.

For each run: the anonymization's own wall and CPU time (target 10 s for MEPS
m = 2; the machine's load average beside them),
the verifier's verdict, and utility on datasets drawn by ``reconstruct``
(mean over ``DRAWS`` seeded draws, ``ASSOCIATION_DRAWS`` for the default linking, whose
sections within 2.5% move by about a point between draws) for each item-support rule
and linking: MRE (Def. 3)
shares in [-5%, 5%) and [-2.5%, 2.5%) for single codes (level 1) and ICD-9
sections (level 2), ARE (Def. 2) on W1 (frequent itemsets of 1-4 codes at
0.625% support, Section 6.4) and W2 (1000 sets of 1-2 codes).
``reconstruction`` and ``linking`` name the default rules (one record per
item-chunk code, association linking), the ones the figures under
``utility.default`` use; ``utility.<rule>`` are drawn with random linking,
``utility.association`` with association linking (the default).
"""

from __future__ import annotations

import functools
import gzip
import os
import time

import numpy as np
import pandas as pd

from anonymizers.disassociation import DisassociationConfig, disassociate
from anonymizers.disassociation import metrics
from anonymizers.disassociation.reconstruct import (DEFAULT_ITEM_SUPPORT, DEFAULT_LINKING,
                                                    ITEM_SUPPORT, reconstruct)
from anonymizers.policies import hierarchy_policy, unplaced_codes
from anonymizers.verify.disassociation import verify_disassociation
from benchmarks.harness import DATASETS, run_benchmark

MEPS = DATASETS / "informs_meps2005" / "conditions05.csv.gz"
BMS = DATASETS / "transactions" / "BMS1.dat.gz"
DRAWS = (1, 2, 3)
ASSOCIATION_DRAWS = tuple(range(1, 13))
# paper figures (Section 6): Fig. 18 (level 1, k = 5), Fig. 21 (k = 2 and 25), Fig. 17
PAPER = {"fig18_level1_k5_share_in_5": 0.90, "fig18_level1_k5_share_in_2.5": 0.81,
         "fig21_share_in_5_k2": 0.953, "fig21_share_in_5_k25": 0.53,
         "fig21_share_in_5_mean_over_k": 0.757, "fig17_are_max_k5_to_25": 0.05}


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


def timed(fn, cpu: bool = False):
    """``fn()``, its wall time and, with ``cpu``, its process CPU time (on a
    shared machine the wall time mostly measures the other processes)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    wall = round(time.perf_counter() - t0, 3)
    return (out, wall, round(time.process_time() - c0, 3)) if cpu else (out, wall)


class Workloads:
    """The original records, W1, W2 and the policies the MRE is read on."""

    def __init__(self, data: pd.DataFrame, policies: dict, seed: int = 1):
        self.original = metrics.as_records(data)
        rng = np.random.default_rng(seed)
        self.w2 = metrics.w2_workload(self.original, rng, n_queries=1000, sizes=(1, 2))
        self.support = metrics.w1_support(self.original.n_records)
        self.w1 = metrics.w1_workload(self.original, rng, n_chains=250, max_size=4,
                                      min_support_percent=self.support)
        self.policies = policies

    def describe(self) -> dict:
        return {"w1_min_support_percent": self.support,
                "w1_queries": {c: len(q) for c, q in self.w1.items()},
                "mre_constraints": {n: len(p) for n, p in self.policies.items()}}

    def measure(self, drawn) -> dict:
        drawn = metrics.as_records(drawn)
        w1_all = [q for qs in self.w1.values() for q in qs]
        row = {"are_w1": metrics.are(self.original, drawn, w1_all) if w1_all else None,
               "are_w2": metrics.are(self.original, drawn, self.w2)}
        for c, q in self.w1.items():
            row[f"are_w1_size{c}"] = metrics.are(self.original, drawn, q)
        for name, policy in self.policies.items():
            mre = metrics.mre(self.original, drawn, policy)
            row[f"mre_{name}_share_in_5"] = metrics.share_within(mre)
            row[f"mre_{name}_share_in_2.5"] = metrics.share_within(mre, -0.025, 0.025)
        return row


def utility(work: Workloads, release, modes=ITEM_SUPPORT, association_draws=DRAWS) -> dict:
    """Mean of each figure over the seeded draws: each item-support rule in
    ``modes`` with random linking (``<rule>``), the default rule with
    association linking (``association``), and the default reconstruction
    (``default``: the entry of the default rules)."""
    out = {mode: _mean([work.measure(reconstruct(release, seed=s, item_support=mode,
                                                 linking="random")) for s in DRAWS])
           for mode in dict.fromkeys((DEFAULT_ITEM_SUPPORT, *modes))}
    out["association"] = _mean([work.measure(reconstruct(release, seed=s,
                                                         linking="association"))
                                for s in association_draws])
    out["default"] = out["association" if DEFAULT_LINKING == "association"
                         else DEFAULT_ITEM_SUPPORT]
    return out


def _mean(rows: list[dict]) -> dict:
    return {key: (float(np.mean([r[key] for r in rows])) if rows[0][key] is not None else None)
            for key in rows[0]}


def one_run(data: pd.DataFrame, work: Workloads, k: int, m: int, policy, modes=ITEM_SUPPORT,
            association_draws=DRAWS, **options) -> dict:
    cfg = DisassociationConfig(k, m, utility_policy=policy, seed=0, **options)
    result, t_anon, cpu_anon = timed(lambda: disassociate(data, cfg), cpu=True)
    verdict, t_verify = timed(lambda: verify_disassociation(data, result.to_json()))
    util, t_metrics = timed(lambda: utility(work, result.release, modes, association_draws))
    return {"k": k, "m": m, "options": options, "anonymize_seconds": t_anon,
            "anonymize_cpu_seconds": cpu_anon, "load_average_1min": os.getloadavg()[0],
            "verify_seconds": t_verify, "metrics_seconds": t_metrics,
            "verifier_ok": verdict.ok, "verifier_checked_sets": verdict.checked,
            "verifier_violations": list(verdict.violations)[:5], "release": result.metrics,
            "reconstruction": DEFAULT_ITEM_SUPPORT, "linking": DEFAULT_LINKING, "utility": util}


def main(small: bool = False) -> dict:
    meps = load_meps(400 if small else None)
    bms = load_bms(600 if small else None)
    codes = meps["code"].unique()
    level1, level2 = hierarchy_policy(codes, 1), hierarchy_policy(codes, 2)
    ks = (5,) if small else (2, 5, 10, 25)
    run = functools.partial(one_run, association_draws=DRAWS if small else ASSOCIATION_DRAWS)

    def figures():
        work = Workloads(meps, {"codes": level1, "sections": level2})
        out = {"paper": PAPER, "reconstruction": DEFAULT_ITEM_SUPPORT, "linking": DEFAULT_LINKING,
               "meps_unplaced_codes": unplaced_codes(codes, level=1),
               "meps_workloads": work.describe()}
        for k in ks:
            out[f"meps_k{k}_m2"] = run(meps, work, k, 2, level1)
        out["meps_k5_m2_section_policy"] = run(meps, work, 5, 2, level2,
                                                   modes=(DEFAULT_ITEM_SUPPORT,))
        if not small:
            out["meps_k5_m3"] = run(meps, work, 5, 3, level1, modes=(DEFAULT_ITEM_SUPPORT,))
            for window in (256, 1024, 2048):
                out[f"meps_k5_m2_window{window}"] = run(
                    meps, work, 5, 2, level1, modes=(DEFAULT_ITEM_SUPPORT,),
                    refine_window=window)
        out["bms_k5_m2"] = run(bms, Workloads(bms, {}), 5, 2, None)
        return out

    return run_benchmark("disassociation_small" if small else "disassociation", figures,
                         datasets={"meps": str(MEPS), "bms": str(BMS)},
                         small=small, paper="Loukides et al. 2014, Figs. 17, 18, 21")


if __name__ == "__main__":
    main()
