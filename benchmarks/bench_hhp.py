"""Benchmark the HHP release method (El Emam et al., JMIR 2012, appendix) at
the prize's scale: 113,000 members, about 2.67 million claims.

Run from the repository root: ``python -m benchmarks.bench_hhp``.

Data: ``anonymizers/synthetic.py`` (SyntheticConfig(n_members=113_000,
seed=SEED)), its inpatient, outpatient and carrier claims converted to the
method's input (``anonymizers.claims``): primary dx = icd9_dgns_cd_1, the
other diagnosis columns as other_dx_codes (screening only), procedure =
hcpcs_cd_1, service date = clm_from_dt, age and sex from the 2008
beneficiary summary, birth_date from bene_birth_dt, length of stay =
thru - from days for inpatient claims (0 otherwise).  The generator has no
place of service or specialty: this benchmark adds seeded synthetic ones so
that those quasi-identifiers and the place-of-service screening rule are
exercised: inpatient claims get place 21, outpatient 22 (70%), 23, 24 or 19,
carrier 11 (75%), 81, 12, 20, 31, 32 or, for 0.3% of claims, 55-57; the
specialty is drawn from 14 CMS specialty codes with fixed weights.

The method runs with its defaults (the paper's sampling design per node: up
to 1,000 iterations of 10,000 members, stopping once the 95% confidence
interval of the proportion is within +-0.005; k = 5, MaxSup = 0.05, p_m = 5)
and the independent verifier checks the release.  Reported: wall time and
peak memory (harness), the chosen node and its risk, the number of nodes
evaluated, seconds per node, the marketer risk, screening and truncation
counts, and the time of each stage.

``--icd10-ccsr [--members N]`` (benchmarks/hhp.md): the generator's own
ICD-10-CM claims (``code_system="icd10cm"``, N = 20,000 members by default)
released twice with the ``hhp-2012-icd10-v1`` screening lists, once with the
GEM-translated primary condition groups (hierarchies ``hhp-2012-icd10-v1``)
and once with AHRQ's CCSR (``hhp-2012-icd10-ccsr-v1``), same seed and
defaults otherwise; results in ``results/hhp_icd10_ccsr.json``.  Besides the
method's figures each run reports ``dx_bits``: the entropy (bits) of the
released diagnosis labels over the released claims, beside that of the raw
ICD-10-CM codes of the released members' screened claims, a measure the two
hierarchies share (the method's information loss is relative to each
hierarchy's own finest level, so it does not compare them).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.synthetic import SyntheticConfig, generate
from anonymizers.verify.claims import verify_hhp
from benchmarks.harness import run_benchmark

SEED = 20120101
N_MEMBERS = 113_000
SMALL_MEMBERS = 1_500
CARRIER_POS = (["11", "81", "12", "20", "31", "32", "55", "56", "57"],
               [0.75, 0.12, 0.04, 0.04, 0.025, 0.0241, 0.0003, 0.0003, 0.0003])
OUTPATIENT_POS = (["22", "23", "24", "19"], [0.70, 0.15, 0.10, 0.05])
SPECIALTIES = (["11", "08", "06", "69", "30", "93", "20", "01", "16", "37", "65", "22", "05", "02"],
               [0.20, 0.15, 0.10, 0.10, 0.08, 0.06, 0.06, 0.05, 0.04, 0.04, 0.04, 0.03, 0.03,
                0.02])


def claims_table(chunk: dict, rng: np.random.Generator) -> pd.DataFrame:
    """The method's input for one generator chunk (module docstring)."""
    bene = chunk["beneficiary_summary"]
    bene = bene[bene["year"] == 2008].set_index("desynpuf_id")
    parts = []
    for kind in ("inpatient", "outpatient", "carrier"):
        c = chunk[f"{kind}_claims"]
        dx_cols = sorted((col for col in c.columns if col.startswith("icd9_dgns_cd_")),
                         key=lambda col: int(col.rsplit("_", 1)[1]))
        start = pd.to_datetime(c["clm_from_dt"])
        los = ((pd.to_datetime(c["clm_thru_dt"]) - start).dt.days.to_numpy()
               if kind == "inpatient" else np.zeros(len(c), dtype=np.int64))
        parts.append(pd.DataFrame({
            "member_id": c["desynpuf_id"].to_numpy(), "claim_id": c["clm_id"].to_numpy(),
            "service_date": start.to_numpy(), "dx_code": c[dx_cols[0]].to_numpy(),
            "procedure_code": c["hcpcs_cd_1"].to_numpy(), "length_of_stay": los,
            "place_of_service": _places(kind, len(c), rng)}))
    out = pd.concat(parts, ignore_index=True)
    birth = pd.to_datetime(bene["bene_birth_dt"]).reindex(out["member_id"]).to_numpy()
    out["birth_date"] = birth
    days = (out["service_date"].to_numpy() - birth) // np.timedelta64(1, "D")
    out["age_at_service"] = np.maximum(days, 0) * 4 // 1461
    out["sex"] = bene["bene_sex_ident_cd"].astype(str).reindex(out["member_id"]).to_numpy()
    out["specialty"] = rng.choice(SPECIALTIES[0], size=len(out), p=SPECIALTIES[1])
    return out


def _places(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "inpatient":
        return np.full(n, "21", dtype=object)
    codes, p = OUTPATIENT_POS if kind == "outpatient" else CARRIER_POS
    return rng.choice(codes, size=n, p=p)


def make_claims(n_members: int, seed: int = SEED, code_system: str = "icd9cm") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    config = SyntheticConfig(n_members=n_members, seed=seed, code_system=code_system)
    return pd.concat([claims_table(ch, rng) for ch in generate(config)], ignore_index=True)


def run(n_members: int, config: HHPConfig) -> dict:
    t0 = time.perf_counter()
    claims = make_claims(n_members)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = hhp_release(claims, config)
    t_method = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_hhp(result, claims)
    t_verify = time.perf_counter() - t0
    m = result.metrics
    return {
        "members_in": m["input"]["members"], "claims_in": m["input"]["claims"],
        "members_released": m["released"]["members"], "claims_released": m["released"]["claims"],
        "members_removed_by_screening": m["members_removed_by_screening"],
        "truncation": m["truncation"], "qis_used": m["qis_used"], "ungrouped": m["ungrouped"],
        "chosen_node": m["chosen_node"], "risk": m["risk"],
        "risk_ci_halfwidth": m["risk_ci_halfwidth"], "risk_iterations": m["risk_iterations"],
        "information_loss": m["information_loss"], "lattice_size": m["lattice_size"],
        "nodes_evaluated": m["nodes_evaluated"], "search_complete": m["search_complete"],
        "seconds_per_node": m["seconds_per_node"],
        "max_seconds_node": max(n.seconds for n in result.lattice),
        "iterations_per_node_mean": float(np.mean([n.iterations for n in result.lattice])),
        "marketer_risk": m["marketer_risk"]["theta"],
        "seconds": {"data": round(t_data, 1), "method": round(t_method, 1),
                    "search": m["seconds_search"], "verify": round(t_verify, 1)},
        "verified": verdict.ok, "violations": list(verdict.violations),
    }


ICD10_MEMBERS = 20_000
ICD10_POLICY = "hhp-2012-icd10-v1"
ICD10_HIERARCHIES = {"pcg": "hhp-2012-icd10-v1", "ccsr": "hhp-2012-icd10-ccsr-v1"}


def entropy_bits(values) -> float:
    p = pd.Series(values).value_counts(normalize=True).to_numpy()
    return float(-(p * np.log2(p)).sum()) if len(p) else 0.0


def icd10_run(claims: pd.DataFrame, hierarchies: str) -> dict:
    """One release of the ICD-10 comparison (module docstring) and its figures."""
    config = HHPConfig(seed=SEED, policy_path=ICD10_POLICY, hierarchies_path=hierarchies)
    t0 = time.perf_counter()
    result = hhp_release(claims, config)
    t_method = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_hhp(result, claims, ICD10_POLICY, hierarchies)
    t_verify = time.perf_counter() - t0
    m = result.metrics
    kept = claims[claims["member_id"].isin(set(result.key["source_member_id"]))]
    return {
        "hierarchies": hierarchies, "chosen_node": m["chosen_node"], "risk": m["risk"],
        "risk_ci_halfwidth": m["risk_ci_halfwidth"], "information_loss": m["information_loss"],
        "members_in": m["input"]["members"], "claims_in": m["input"]["claims"],
        "members_removed_by_screening": m["members_removed_by_screening"],
        "members_released": m["released"]["members"], "claims_released": m["released"]["claims"],
        "claims_released_pct": round(100.0 * m["released"]["claims"]
                                     / max(m["input"]["claims"], 1), 2),
        "claims_truncated": m["truncation"]["claims_truncated"],
        "dx_groups_released": int(result.claims["dx"].nunique()),
        "dx_bits": {"released": round(entropy_bits(result.claims["dx"]), 3),
                    "raw_codes": round(entropy_bits(kept["dx_code"].fillna("")), 3)},
        "ungrouped_dx": m["ungrouped"].get("dx"), "marketer_risk": m["marketer_risk"]["theta"],
        "nodes_evaluated": m["nodes_evaluated"], "lattice_size": m["lattice_size"],
        "search_complete": m["search_complete"],
        "seconds": {"method": round(t_method, 1), "search": m["seconds_search"],
                    "verify": round(t_verify, 1)},
        "verified": verdict.ok, "violations": list(verdict.violations)[:5]}


def compare_icd10(n_members: int) -> dict:
    t0 = time.perf_counter()
    claims = make_claims(n_members, code_system="icd10cm")
    out = {"n_members": n_members, "seconds_data": round(time.perf_counter() - t0, 1)}
    for name, hierarchies in ICD10_HIERARCHIES.items():
        out[name] = icd10_run(claims, hierarchies)
    return out


def main_icd10(n_members: int = ICD10_MEMBERS) -> dict:
    config = HHPConfig(seed=SEED)
    return run_benchmark("hhp_icd10_ccsr", lambda: compare_icd10(n_members),
                         n_members=n_members, seed=SEED, policy=ICD10_POLICY,
                         config={"k": config.k, "max_sup": config.max_sup,
                                 "p_max": config.p_max, "sample_size": config.sample_size,
                                 "max_iterations": config.max_iterations,
                                 "ci_halfwidth": config.ci_halfwidth,
                                 "max_evaluations": config.max_evaluations})


def main(small: bool = False) -> dict:
    n = SMALL_MEMBERS if small else N_MEMBERS
    config = (HHPConfig(seed=SEED, sample_size=500, ci_halfwidth=0.02, max_evaluations=20)
              if small else HHPConfig(seed=SEED))
    name = "hhp_small" if small else "hhp"
    return run_benchmark(name, lambda: run(n, config), n_members=n, seed=SEED,
                         config={"k": config.k, "max_sup": config.max_sup,
                                 "p_max": config.p_max, "sample_size": config.sample_size,
                                 "max_iterations": config.max_iterations,
                                 "ci_halfwidth": config.ci_halfwidth,
                                 "max_evaluations": config.max_evaluations})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--icd10-ccsr", action="store_true",
                    help="ICD-10-CM claims: GEM-translated groups against CCSR")
    ap.add_argument("--members", type=int, default=ICD10_MEMBERS)
    args = ap.parse_args()
    main_icd10(args.members) if args.icd10_ccsr else main()
