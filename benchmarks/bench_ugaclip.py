"""Benchmark PPE + UGACLIP (Loukides et al., PNAS 2010, SI Algorithms 1-2)
against ACLIP, a suppression-only baseline and a lower bound on suppression.

Run from the repository root: ``python -m benchmarks.bench_ugaclip``
(``--small`` for a quick run; ``--case NAME`` (repeatable) measures only
those cases and keeps the other cases' figures of the results file, each
case carrying its own ``measured_at``; ``--bound-seconds S`` sets the lower
bound's total time budget, default ``BOUND_SECONDS``, recorded per case as
``budget_seconds``; ``--bound-only`` re-measures only the lower bounds of the
cases and keeps their other figures, with ``--bound-seconds 0`` only the
holder-pair and hull bounds).  Narrative and readings: benchmarks/ugaclip.md.

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

Each case reports, for UGACLIP, UGACLIP guided by a suppression plan (the
bound run's last incumbent repaired to feasibility, ``anonymizers.ugaclip.plan``;
its size is also an upper bound on the minimum), ACLIP and suppression-only: the two measures
of Fig. S1 (distinct suppressed codes |S|; suppressed occurrences, the sum of
sup(i, D) over S), IL (Definition 2; log10 where the float underflows) and RE
of 1- and 2-code COUNT queries; the verifier's verdict on each release; and
the lower bounds of ``anonymizers.ugaclip.bound``: relaxation (R), and (R)
with shrink cuts (both valid on the full data; the latter exact when it
converges), the holder-pair decomposition bound, the frequent-set hull
(Lagrangian) bound, and the record-level MILP
on a small sample.  The ratio to the bound uses the largest of them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

import numpy as np
import pandas as pd

from anonymizers.io import read_table
from anonymizers.policies import hierarchy_policy
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.records import encode
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.ugaclip.baselines import aclip, suppression_only
from anonymizers.ugaclip.bound import (build_problem, exact_min_suppression, feasible,
                                       holder_pair_bound, hull_lagrangian_bound,
                                       relaxed_min_suppression)
from anonymizers.ugaclip.plan import repair
from anonymizers.verify.ugaclip import verify_release
from benchmarks.harness import DATASETS, RESULTS, run_benchmark

K = 5
SEED = 0
BOUND_SECONDS = 600.0     # (R), then shrink cuts, per case
ROUND_SECONDS = 20.0      # one covering MILP; a stopped round gives its dual bound (ugaclip.md)
EXACT_SECONDS = 300.0     # the record-level MILP on the small sample
PAIR_ROUNDS = 10          # holder-pair bound: rounds of share moves (round 1: even shares);
PAIR_SECONDS = 300.0      # no round of it starts after this many seconds (ugaclip.md)
HULL_ITERATIONS = 5000    # frequent-set hull bound: subgradient steps (ugaclip.md)
HULL_SECONDS = 600.0      # no step of it starts after this many seconds
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
            "unplaced_codes": m["unplaced_codes"], "plan": m.get("plan")}


def methods(patients: pd.DataFrame, policy: list, utility) -> dict:
    """UGACLIP and the two baselines of the SI on one case."""
    config = UGACLIPConfig(K, seed=SEED)
    return {"ugaclip": method_figures("UGACLIP",
                                      lambda: ugaclip(patients, policy, utility, config),
                                      patients, policy),
            "aclip": method_figures("ACLIP", lambda: aclip(patients, policy, config),
                                    patients, policy),
            "suppression_only": method_figures(
                "suppression-only", lambda: suppression_only(patients, policy, config),
                patients, policy)}


def one_case(df: pd.DataFrame, filt: str, level: int, exact: bool,
             bound_seconds: float = BOUND_SECONDS) -> dict:
    t0 = time.perf_counter()
    policy = [list(c) for c in extract_policy(df, PPEConfig(K, filt)).constraints]
    t_ppe = time.perf_counter() - t0
    patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    utility = hierarchy_policy(sorted(patients["code"].unique()), level)
    config = UGACLIPConfig(K, seed=SEED)
    out = {"filter": filt, "utility_policy": f"hierarchy level {level}",
           "n_patients": int(patients["patient_id"].nunique()),
           "n_codes": int(patients["code"].nunique()), "ppe_seconds": round(t_ppe, 3),
           "ppe_constraints": len(policy), **methods(patients, policy, utility)}
    records = encode(patients)
    problem = build_problem(records, policy, utility, K)
    out["lower_bound"], plan = bounds(problem, exact, bound_seconds)
    out["lower_bound"]["holder_pairs"] = pair_bound(problem)
    out["lower_bound"]["hull"] = hull_bound(problem)
    out["plan"] = plan_figures(problem, plan)
    plan_codes = records.codes[out["plan"].pop("codes")].tolist()
    out["ugaclip_planned"] = method_figures(
        "UGACLIP (planned)", lambda: ugaclip(patients, policy, utility, config, plan=plan_codes),
        patients, policy)
    over_bound(out)
    out["case_seconds"] = round(time.perf_counter() - t0, 1)
    out["measured_at"] = _now()
    return out


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def over_bound(out: dict) -> None:
    """UGACLIP's codes over the best (largest) valid lower bound."""
    best = max(b["bound"] for b in out["lower_bound"].values())
    for method in ("ugaclip", "ugaclip_planned"):
        ug = out.get(method, {}).get("suppressed_codes")
        if ug is not None and best:
            out[f"{method}_over_bound"] = round(ug / best, 3)


def pair_bound(problem) -> dict:
    """The holder-pair (decomposition) bound, valid like the others."""
    run = holder_pair_bound(problem, rounds=PAIR_ROUNDS, time_limit=PAIR_SECONDS)
    run["budget_seconds"] = PAIR_SECONDS
    run["measured_at"] = _now()
    return run


def hull_bound(problem) -> dict:
    """The frequent-set hull (Lagrangian) bound, valid like the others;
    ``cpu_seconds`` beside the wall ``seconds`` (the machine is shared)."""
    cpu = time.process_time()
    run = hull_lagrangian_bound(problem, iterations=HULL_ITERATIONS, time_limit=HULL_SECONDS)
    run.update(cpu_seconds=round(time.process_time() - cpu, 1), budget_seconds=HULL_SECONDS,
               measured_at=_now())
    return run


def bound_only(df: pd.DataFrame, filt: str, level: int, old: dict,
               bound_seconds: float) -> dict:
    """Re-measure only the lower bounds of a case and keep its other
    figures (``old``, the results file's); ``bound_seconds`` 0 keeps the old
    cutting-plane figure too and measures only the holder-pair and hull bounds."""
    policy = [list(c) for c in extract_policy(df, PPEConfig(K, filt)).constraints]
    patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    utility = hierarchy_policy(sorted(patients["code"].unique()), level)
    problem = build_problem(encode(patients), policy, utility, K)
    out = dict(old)
    lower = dict(old.get("lower_bound", {}))
    if bound_seconds > 0:
        lower["shrink"] = relaxed_min_suppression(problem, time_limit=bound_seconds,
                                                  round_limit=ROUND_SECONDS, shrink=True)
        lower["shrink"].update(budget_seconds=bound_seconds, measured_at=_now())
        for key in ("suppressed", "incumbent"):
            lower["shrink"].pop(key)
    lower["holder_pairs"] = pair_bound(problem)
    lower["hull"] = hull_bound(problem)
    out["lower_bound"] = lower
    over_bound(out)
    out["bound_measured_at"] = _now()
    return out


def methods_only(df: pd.DataFrame, filt: str, level: int, old: dict) -> dict:
    """Re-measure UGACLIP and the baselines of a case, keeping its bounds and
    plan (``old``, the results file's): the bounds do not depend on the
    algorithm, so a change to UGACLIP is measured without their hour."""
    policy = [list(c) for c in extract_policy(df, PPEConfig(K, filt)).constraints]
    patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    utility = hierarchy_policy(sorted(patients["code"].unique()), level)
    out = {**old, **methods(patients, policy, utility), "methods_measured_at": _now()}
    over_bound(out)
    return out


def bounds(problem, exact: bool, bound_seconds: float = BOUND_SECONDS) -> dict:
    """(R), then (R) with shrink cuts, in one run (``shrink``; its
    ``relaxed`` is (R)'s figure if (R)'s cuts ran out in time); the
    record-level MILP on request.  Every figure is a valid lower bound, so
    the largest is the one to use."""
    shrink = relaxed_min_suppression(problem, time_limit=bound_seconds,
                                     round_limit=ROUND_SECONDS, shrink=True)
    shrink["budget_seconds"] = bound_seconds
    shrink.pop("suppressed")
    incumbent = shrink.pop("incumbent")
    out = {"shrink": shrink}
    if exact:
        out["exact"] = exact_min_suppression(problem, time_limit=EXACT_SECONDS)
    return out, incumbent


def plan_figures(problem, incumbent) -> dict:
    """The plan for line 17 (``anonymizers.ugaclip.plan``): the bound run's
    last incumbent repaired to a feasible set of the group-generalized model,
    i.e. also an upper bound on the fewest codes any release must suppress."""
    chosen = np.zeros(problem.matrix.shape[1], dtype=bool)
    chosen[incumbent] = True
    plan = repair(problem, chosen)
    return {"incumbent": len(incumbent), "repaired": int(plan.sum()),
            "feasible": feasible(problem, np.flatnonzero(plan)),
            "codes": np.flatnonzero(plan)}


CASES = ("meps_single-visit", "meps_all-visits", "synpuf_single-visit", "synpuf_all-visits",
         "synpuf_sample_single-visit_exact")
PLAN_SECONDS = 120.0  # --realised: each plan's MILP budget, as bench_icd10's


def realised(cases) -> dict:
    """UGACLIP realising its own plan (``realise_plan``, plans of
    ``PLAN_SECONDS`` on distinct codes and on occurrences;
    docs/methods/ugaclip.md#ugaclip-realise) on ``cases``, written to
    ``ugaclip_realised.json`` so that ``ugaclip.json``'s figures stay as
    measured."""
    def figures() -> dict:
        out = {}
        for case in cases:
            exact = case.endswith("_exact")   # the sample: DE-SynPUF single-visit
            source, filt = case.split("_")[0], "single-visit" if exact else case.split("_")[1]
            df = (load_synpuf(EXACT_SAMPLE) if exact
                  else {"meps": load_meps, "synpuf": load_synpuf}[source]())
            level = 2 if source == "meps" else 1
            policy = [list(c) for c in extract_policy(df, PPEConfig(K, filt)).constraints]
            patients = df[["patient_id", "code"]].drop_duplicates(ignore_index=True)
            utility = hierarchy_policy(sorted(patients["code"].unique()), level)
            out[case] = {w: method_figures(
                f"UGACLIP (realised, {w} plan)",
                lambda w=w: ugaclip(patients, policy, utility, UGACLIPConfig(
                    K, seed=SEED, plan_seconds=PLAN_SECONDS, plan_weights=w, realise_plan=True)),
                patients, policy)
                for w in ("codes", "occurrences")} | {"measured_at": _now()}
        return out

    return run_benchmark("ugaclip_realised", figures, k=K, seed=SEED,
                         plan_seconds=PLAN_SECONDS, cases_run=list(cases))


def main(small: bool = False, cases=CASES, bound_seconds: float = BOUND_SECONDS,
         only_bounds: bool = False, only_methods: bool = False) -> dict:
    name = "ugaclip_small" if small else "ugaclip"
    path = RESULTS / f"{name}.json"
    kept = json.loads(path.read_text())["figures"] if path.exists() else {}

    def figures() -> dict:
        out = {}
        data = {"meps": lambda: load_meps(SMALL["meps"] if small else None),
                "synpuf": lambda: load_synpuf(SMALL["synpuf"] if small else None)}
        loaded = {}
        for case in cases:
            source, filt = case.split("_")[0], case.split("_")[1]
            if case.endswith("_exact"):
                out[case] = one_case(load_synpuf(EXACT_SAMPLE), "single-visit", 1, exact=True,
                                     bound_seconds=bound_seconds)
                continue
            df = loaded.setdefault(source, data[source]())
            level = 2 if source == "meps" else 1
            if (only_bounds or only_methods) and case not in kept:
                raise SystemExit(f"--bound-only/--methods-only: no figures of {case} yet; "
                                 "run it in full first")
            if only_bounds:
                out[case] = bound_only(df, filt, level, kept[case], bound_seconds)
            elif only_methods:
                out[case] = methods_only(df, filt, level, kept[case])
            else:
                out[case] = one_case(df, filt, level, exact=False, bound_seconds=bound_seconds)
        if tuple(cases) != CASES:  # the other cases keep their last measured figures
            out = {c: out.get(c, kept.get(c)) for c in CASES if c in out or c in kept}
        return out

    return run_benchmark(name, figures, dataset="informs_meps2005 + synpuf/cms_bfd_sample_testB",
                         k=K, seed=SEED, small=small, cases_run=list(cases),
                         bounds_only=only_bounds, methods_only=only_methods)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="400 MEPS patients, 40 DE-SynPUF")
    parser.add_argument("--case", action="append", choices=CASES,
                        help="measure only this case (repeatable); default: all")
    parser.add_argument("--bound-seconds", type=float, default=BOUND_SECONDS,
                        help=f"the lower bound's total time budget per case (default {BOUND_SECONDS:g})")
    parser.add_argument("--bound-only", action="store_true",
                        help="re-measure only the lower bounds of the cases (an _exact case "
                             "still runs in full), "
                             "keeping their other figures; --bound-seconds 0 keeps the "
                             "cutting-plane bound and measures only the holder-pair and "
                             "hull bounds")
    parser.add_argument("--methods-only", action="store_true",
                        help="re-measure only UGACLIP and the baselines of the cases, keeping "
                             "their bounds and plan (the planned UGACLIP is not re-run)")
    parser.add_argument("--realised", action="store_true",
                        help="measure only UGACLIP realising its own plans (realise_plan) on "
                             "the cases, into ugaclip_realised.json")
    args = parser.parse_args()
    if args.realised:
        realised(tuple(args.case or CASES))
    else:
        main(small=args.small, cases=tuple(args.case or CASES), bound_seconds=args.bound_seconds,
             only_bounds=args.bound_only, only_methods=args.methods_only)
