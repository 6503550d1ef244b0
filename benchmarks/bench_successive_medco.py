"""Benchmark: successive MedCo releases on MEPS 2005, without and with the
persisting dummies (issue 25; ``anonymizers.dummies.persist``).

``python -m benchmarks.bench_successive_medco`` from the repository root.
Issue 25's cohorts: release 1 of 3,000 MEPS persons drawn at random (seed
2005); release 2 of 3,000, of whom 2,700 are in release 1 (300 leave, 300
arrive); the must-show figures are on this pair.  A third release (2,700
of release 2's persons and 300 new) is attacked with all three, and a
lineage of 8 runs (300 persons replaced each time) shows the defence and
its utility over time.
Codes: ICD9CODX per DUPERSID, as ``bench_medco``.  Clusters at minimum
anonymity set 200 with 2 clusters (``bench_medco``'s meps_a200_k2).

- defence off: each run alone, clustered on its own data, dummies by
  ``generate_dummies`` (what a scheduled run did before issue 25);
- defence on: run 1 starts a lineage (``persist.apply``), run 2 continues
  it with the state of run 1 and ``persist.clusters_for``.

Every release is checked by the independent verifier.  The attacks of
``anonymizers.successive.medco`` are scored on records with at least 3 codes;
utility is the real ratio (released code occurrences over real ones) beside
the theoretical one (Zoveralli, Fig. 7).  Narrative:
``benchmarks/successive_medco.md``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.dummies import ClusterConfig, DummyConfig, cluster_codes, generate_dummies
from anonymizers.dummies import persist
from anonymizers.successive.medco import attack
from anonymizers.verify.dummies import verify_dummies
from benchmarks.harness import DATASETS, run_benchmark

SOURCE = DATASETS / "informs_meps2005" / "conditions05.csv.gz"
SEED, DUMMY_SEED = 2005, 20051
N, SHARED, A, K, MIN_CODES = 3000, 2700, 200, 2, 3
GENERATIONS = 8


def cohorts(path: Path, n: int = 3) -> list[pd.DataFrame]:
    """The inputs of ``n`` releases: ``N`` random persons each, ``SHARED`` of
    each release's persons in the next (the oldest leave, new ones arrive)."""
    df = pd.read_csv(path, dtype=str, usecols=["DUPERSID", "ICD9CODX"], keep_default_na=False)
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"}).drop_duplicates()
    ids = np.random.default_rng(SEED).permutation(df["patient_id"].unique())
    step = N - SHARED
    return [df[df["patient_id"].isin(ids[i * step:i * step + N])] for i in range(n)]


def _clusters(df: pd.DataFrame) -> list:
    return cluster_codes(df, ClusterConfig(min_anonymity_set=A, n_clusters=K)).clusters


def releases(inputs, defence: bool) -> tuple[list, dict]:
    """The two releases and their utility, verdicts and times."""
    results, state, info = [], None, {"verdicts_ok": True, "releases": []}
    for df in inputs:
        t = time.perf_counter()
        if defence:
            cl = _clusters(df) if state is None else persist.clusters_for(df, state)
            res, state = persist.apply(df, cl, DummyConfig(seed=DUMMY_SEED), state)
        else:
            cl = _clusters(df)
            res = generate_dummies(df, cl, DummyConfig(seed=DUMMY_SEED))
        seconds = time.perf_counter() - t
        verdict = verify_dummies(df, res.released, res.dummy_map, cl, A)
        info["verdicts_ok"] &= verdict.ok
        info["releases"].append(_utility(res.metrics, seconds, verdict.ok))
        results.append(res)
    return results, info


def _utility(m: dict, seconds: float, ok: bool) -> dict:
    keep = ("n_real_patients", "n_dummies", "carried_dummies", "new_dummies", "retired_dummies",
            "clusters_kept", "route")
    out = {k: m[k] for k in keep if k in m}
    return out | {"real_ratio": round(m["real_ratio"], 4),
                  "theoretical_ratio": round(m["theoretical_ratio"], 4),
                  "real_over_theoretical": round(m["real_ratio"] / m["theoretical_ratio"], 4),
                  "dummies_per_real_patient": round(m["dummies_per_real_patient"], 3),
                  "seconds": round(seconds, 2), "verdict_ok": ok}


def measure(path: Path = SOURCE, third: bool = False) -> dict:
    """Issue 25's pair of releases, without and with the defence; with
    ``third``, also a third release (2,700 of release 2's persons) attacked
    with all three."""
    inputs = cohorts(path)[:3 if third else 2]
    figures = {"persons": [int(d["patient_id"].nunique()) for d in inputs],
               "shared_persons": SHARED, "min_anonymity_set": A, "n_clusters": K,
               "min_codes": MIN_CODES}
    for label, defence in (("defence_off", False), ("defence_on", True)):
        results, info = releases(inputs, defence)
        t = time.perf_counter()
        report = _attack(results[:2])
        info["attack_seconds"] = round(time.perf_counter() - t, 2)
        info["seen_before"] = report["attacks"]["seen_before"][0]
        info["attacks"] = report["attacks"]
        info["strongest"] = report["strongest"]
        info["strongest_single_release"] = report["strongest_single_release"]
        info["breached"] = report["breached"]
        if third:
            report = _attack(results)
            info["three_releases"] = {k: report[k] for k in ("breached", "strongest")} | {
                "seen_before": report["attacks"]["seen_before"],
                "seen_after": report["attacks"]["seen_after"]}
        figures[label] = info
    on = figures["defence_on"]["seen_before"]
    figures["within_5_points_with_defence"] = abs(on["precision"] - on["base_rate"]) <= 0.05
    return figures


def lineage(path: Path = SOURCE, generations: int = GENERATIONS) -> list[dict]:
    """A lineage of ``generations`` weekly-like runs with the defence: per run,
    the real ratio beside a fresh release of the same cohort and clusters, and
    the seen-before attack on the pair (previous run, this run)."""
    rows, state, before = [], None, None
    for g, df in enumerate(cohorts(path, generations), 1):
        res, state = persist.apply(df, _clusters(df) if state is None else None,
                                   DummyConfig(seed=DUMMY_SEED), state)
        fresh = generate_dummies(df, state.clusters, DummyConfig(seed=DUMMY_SEED))
        ok = verify_dummies(df, res.released, res.dummy_map, state.clusters, A).ok
        m = res.metrics
        row = {"release": g, "verdict_ok": ok, "real_ratio": round(m["real_ratio"], 4),
               "fresh_real_ratio": round(fresh.metrics["real_ratio"], 4),
               "theoretical_ratio": round(m["theoretical_ratio"], 4),
               "carried_dummies": m["carried_dummies"], "new_dummies": m["new_dummies"],
               "retired_dummies": m["retired_dummies"], "leaving_rate": m["leaving_rate"]}
        if before is not None:
            report = _attack([before, res])
            sb = report["attacks"]["seen_before"][0]
            row |= {"seen_before_precision": sb["precision"], "base_rate": sb["base_rate"],
                    "breached": report["breached"]}
        rows.append(row)
        before = res
    return rows


def _attack(results) -> dict:
    return attack([r.released for r in results], [r.dummy_map for r in results], MIN_CODES)


def _all() -> dict:
    return measure(third=True) | {"lineage": lineage()}


def main() -> dict:
    return run_benchmark("successive_medco", _all,
                         dataset=str(SOURCE.name), seed=SEED,
                         method="MedCo: releases alone vs dummies persisting with their "
                                "source (issue 25)")


if __name__ == "__main__":
    main()
