"""Benchmark PPE + UGACLIP (Loukides et al., PNAS 2010, SI Algorithms 1-2)
against ACLIP, a suppression-only baseline and a lower bound on suppression.

Run from the repository root: ``python -m benchmarks.bench_ugaclip``
(``--small`` for a quick run).  Narrative and readings: benchmarks/ugaclip.md.

Data and policies (k = 5):

* MEPS 2005 conditions (``informs_meps2005/conditions05.csv.gz``): DUPERSID ->
  patient, ICD9CODX -> code (26,854 patients, 601 three-digit codes incl.
  -1/-9).  Utility policy: ICD-9 sections (``hierarchy_policy(codes, 2)``);
  the level-1 policy would make every constraint one code.  The file has no
  visit or date: single-visit reads each condition row as one visit.
* DE-SynPUF TestB claims (inpatient, outpatient, carrier; ICD9_DGNS_CD_* and
  ADMTNG_ICD9_DGNS_CD): 424 beneficiaries, 6,372 undotted 3-5 digit codes.
  Utility policy: 3-digit categories (``hierarchy_policy(codes, 1)``).  A
  visit is a (beneficiary, claim from-date).

Each case reports, for UGACLIP, ACLIP and suppression-only: the two measures
of Fig. S1 (distinct suppressed codes |S|; suppressed occurrences, the sum of
sup(i, D) over S), IL (Definition 2; log10 where the float underflows) and RE
of 1- and 2-code COUNT queries; the verifier's verdict on each release; and
the lower bound of ``anonymizers.ugaclip.bound`` (relaxation (R), valid on the
full data; exact MILP on a small sample).
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from anonymizers.io import read_table
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.baselines import aclip, suppression_only
from anonymizers.ugaclip.bound import build_problem, exact_min_suppression, relaxed_min_suppression
from anonymizers.verify.ugaclip import verify_release
from benchmarks.harness import DATASETS, run_benchmark

K = 5
SEED = 0
BOUND_SECONDS = 200.0
SYNPUF = DATASETS / "synpuf" / "cms_bfd_sample_testB"
CLAIMS = (("Inpatient_Claims_Sample_TestB", 10), ("Outpatient_Claims_Sample_TestB", 10),
          ("Carrier_Claims_Sample_TestBA", 8))
SMALL = {"meps": 400, "synpuf": 40}
EXACT_SAMPLE = 12  # beneficiaries of the sample the exact MILP is solved on


def load_meps(limit: int | None = None) -> pd.DataFrame:
    df = read_table(DATASETS / "informs_meps2005" / "conditions05.csv.gz",
                    ["DUPERSID", "ICD9CODX"])
    df = df.rename(columns={"DUPERSID": "patient_id", "ICD9CODX": "code"})
    df = _first_patients(df, limit)
    return df.assign(visit_id=[str(i) for i in range(len(df))])  # one condition, one visit


def load_synpuf(limit: int | None = None) -> pd.DataFrame:
    frames = []
    for name, n in CLAIMS:
        wanted = [f"ICD9_DGNS_CD_{i}" for i in range(1, n + 1)] + ["ADMTNG_ICD9_DGNS_CD"]
        claims = pd.read_csv(SYNPUF / f"DE1_0_2008_to_2010_{name}.csv.gz", dtype=str,
                             usecols=lambda c: c in {"DESYNPUF_ID", "CLM_FROM_DT", *wanted})
        cols = [c for c in wanted if c in claims.columns]
        long = claims.melt(id_vars=["DESYNPUF_ID", "CLM_FROM_DT"], value_vars=cols,
                           value_name="code").dropna(subset=["code"])
        frames.append(long)
    d = pd.concat(frames)
    df = pd.DataFrame({"patient_id": d["DESYNPUF_ID"].to_numpy(),
                       "visit_id": d["CLM_FROM_DT"].fillna("").to_numpy(),
                       "code": d["code"].str.strip().to_numpy()})
    return _first_patients(df.drop_duplicates(ignore_index=True), limit)


def _first_patients(df: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    if limit:
        df = df[df["patient_id"].isin(df["patient_id"].drop_duplicates().iloc[:limit])]
    return df.reset_index(drop=True)


def method_figures(name, fn, df, policy) -> dict:
    t0 = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - a refusal is a measured outcome
        return {"method": name, "refused": str(exc)}
    seconds = time.perf_counter() - t0
    verdict = verify_release(df, result.to_dict(), policy, K)
    m = result.metrics
    n_codes = m["n_codes"]
    return {"method": name, "seconds": round(seconds, 3), "verifier_ok": verdict.ok,
            "suppressed_codes": m["suppressed_codes"],
            "suppressed_codes_share": round(m["suppressed_codes"] / max(n_codes, 1), 4),
            "suppressed_occurrences": m["suppressed_occurrences"],
            "n_items": m["n_items"], "n_generalized_items": m["n_generalized_items"],
            "largest_item": m["largest_item"], "il_total": m["il_total"],
            "il_log10_total": m["il_log10_total"],
            "relative_error": m["relative_error"],
            "utility_satisfied": m["utility_constraints"]["n_satisfied"],
            "utility_present": m["utility_constraints"]["n_present"],
            "privacy_constraints": m["privacy_constraints"], "steps": m["steps"],
            "unplaced_codes": m["unplaced_codes"]}


def one_case(df: pd.DataFrame, filt: str, level: int, exact: bool) -> dict:
    t0 = time.perf_counter()
    policy = [list(c) for c in extract_policy(df, PPEConfig(K, filt)).constraints]
    t_ppe = time.perf_counter() - t0
    patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    utility = hierarchy_policy(sorted(patients["code"].unique()), level)
    config = UGACLIPConfig(K, seed=SEED)
    out = {"filter": filt, "utility_policy": f"hierarchy level {level}",
           "n_patients": int(patients["patient_id"].nunique()),
           "n_codes": int(patients["code"].nunique()), "ppe_seconds": round(t_ppe, 3),
           "ppe_constraints": len(policy),
           "ugaclip": method_figures("UGACLIP", lambda: ugaclip(patients, policy, utility, config),
                                     patients, policy),
           "aclip": method_figures("ACLIP", lambda: aclip(patients, policy, config),
                                   patients, policy),
           "suppression_only": method_figures(
               "suppression-only", lambda: suppression_only(patients, policy, config),
               patients, policy)}
    problem = build_problem(encode(patients), policy, utility, K)
    relaxed = relaxed_min_suppression(problem, time_limit=BOUND_SECONDS)
    relaxed.pop("suppressed")
    out["lower_bound"] = {"relaxed": relaxed}
    if exact:
        out["lower_bound"]["exact"] = exact_min_suppression(problem, time_limit=BOUND_SECONDS)
    ug = out["ugaclip"].get("suppressed_codes")
    if ug is not None and relaxed["bound"]:
        out["ugaclip_over_bound"] = round(ug / relaxed["bound"], 3)
    return out


def main(small: bool = False) -> dict:
    meps = load_meps(SMALL["meps"] if small else None)
    syn = load_synpuf(SMALL["synpuf"] if small else None)

    def figures() -> dict:
        out = {}
        for name, df, level in (("meps", meps, 2), ("synpuf", syn, 1)):
            for filt in ("single-visit", "all-visits"):
                out[f"{name}_{filt}"] = one_case(df, filt, level, exact=False)
        sample = load_synpuf(EXACT_SAMPLE)
        out["synpuf_sample_single-visit_exact"] = one_case(sample, "single-visit", 1, exact=True)
        return out

    name = "ugaclip_small" if small else "ugaclip"
    return run_benchmark(name, figures, dataset="informs_meps2005 + synpuf/cms_bfd_sample_testB",
                         k=K, seed=SEED, small=small)


if __name__ == "__main__":
    main(small="--small" in sys.argv)
