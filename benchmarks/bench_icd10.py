"""ICD-10-CM beside ICD-9-CM on the same claims (issue 27; benchmarks/icd10.md
tells the story).

Case ``lda``: LDA (Tamersoy 2011) at k = 5 on DE-SynPUF TestB claims
trajectories of the first 300 beneficiaries (``bench_lda.synpuf_pairs``:
one (code, age) pair per distinct diagnosis code of each claim), in two code
selections of bench_lda (``synpuf_release``: the release's ICD-9 categories;
``synpuf_d50``: the 50 codes held by the most patients).  Every ICD-9 code
is mapped to one ICD-10-CM code through CMS's GEM
(``anonymizers.codesystems.gem_forward``; the rule for one-to-many is its
docstring's); pairs whose code the GEM cannot carry are dropped from both
systems, so that both runs anonymize the very same trajectories.

Each cohort runs A-GS three times: ICD-9 codes on the ICD-9 tree, the mapped
codes on the ICD-9 tree (what the project did before: every code unknown,
released as ``*``), and the mapped codes on the ICD-10-CM tree.  The
verifier runs on every release with the tree the release used.  The figure
of the issue is ``below_root_pct``: the percent of the input's ICD values
released below the root (a suppressed pair counts as not kept).
``python -m benchmarks.bench_icd10`` from the repository root.
"""

from __future__ import annotations

import time

import pandas as pd

from anonymizers.codesystems import gem_forward
from anonymizers.hierarchy import ROOT
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.hierarchies import icd_hierarchy
from anonymizers.verify.longitudinal import verify_lda
from benchmarks.bench_lda import SYNPUF, synpuf_cohorts, synpuf_pairs
from benchmarks.harness import DATASETS, run_benchmark

K = 5
SEED = 2011
PATIENTS = 300
GEM = DATASETS / "icd9" / "icd9toicd10cmgem.csv.gz"
COHORTS = ("synpuf_release", "synpuf_d50")
MUST_KEEP = 0.8  # issue 27: at least 80% of ICD-9's share of values below the root
KEEP = ("ilm", "alm", "suppressed_pairs", "released_pairs", "unknown_codes", "n_clusters")


def mapped_cohort(pairs: pd.DataFrame, mapping) -> tuple[pd.DataFrame, dict]:
    """``pairs`` with an ``icd10`` column, less the pairs the GEM cannot carry."""
    icd10 = pairs["code"].map(mapping.codes)
    kept = pairs.assign(icd10=icd10)[icd10.notna()].reset_index(drop=True)
    rules = pd.Series([mapping.rule[c] for c in kept["code"]], dtype=object)
    rules = rules.where(~rules.str.startswith("first of"), "first of several")
    return kept, {"pairs": len(pairs), "pairs_unmapped": int(icd10.isna().sum()),
                  "codes_unmapped": int(pairs.loc[icd10.isna(), "code"].nunique()),
                  "icd9_codes": int(kept["code"].nunique()),
                  "icd10_codes": int(kept["icd10"].nunique()),
                  "pairs_by_rule": {k: int(v) for k, v in rules.value_counts().items()}}


def run(pairs: pd.DataFrame, system: str | None) -> dict:
    """A-GS on ``pairs`` (patient_id, code, age) with the tree of ``system``
    (None: the default tree, ICD-9-CM) and the verifier's verdict."""
    tree = None if system is None else icd_hierarchy(system)
    t0 = time.perf_counter()
    result = lda(pairs, LDAConfig(k=K, seed=SEED, icd_hierarchy=tree))
    seconds = time.perf_counter() - t0
    verdict = verify_lda(result.records, result.pseudonym_map, pairs, K, icd_hierarchy=tree)
    codes = result.records["code"].astype(str)
    below = codes != ROOT
    finer = below & ~codes.str.contains("-", regex=False)
    return {"below_root_pct": round(100.0 * below.sum() / len(pairs), 2),
            "below_root_of_released_pct": round(100.0 * below.mean(), 2),
            "category_or_finer_pct": round(100.0 * finer.sum() / len(pairs), 2),
            "seconds": round(seconds, 2), "verifier_ok": verdict.ok,
            "violations": list(verdict.violations[:3]),
            **{key: result.metrics[key] for key in KEEP}}


def case_lda(cohort: pd.DataFrame, mapping) -> dict:
    both, data = mapped_cohort(cohort.drop(columns="service_date"), mapping)
    icd9 = both[["patient_id", "code", "age"]]
    icd10 = both[["patient_id", "icd10", "age"]].rename(columns={"icd10": "code"})
    out = {"data": {**data, "patients": int(both["patient_id"].nunique())},
           "icd9_on_icd9_tree": run(icd9, None),
           "icd10_on_icd9_tree_before": run_or_refusal(icd10, None),
           "icd10_on_icd10_tree": run(icd10, "icd10cm")}
    base = out["icd9_on_icd9_tree"]["below_root_pct"]
    ratio = out["icd10_on_icd10_tree"]["below_root_pct"] / base if base else None
    out["icd10_over_icd9"] = None if ratio is None else round(ratio, 3)
    out["must_show_holds"] = bool(ratio is not None and ratio >= MUST_KEEP)
    return out


def run_or_refusal(pairs: pd.DataFrame, system: str | None) -> dict:
    """``run``, or LDA's refusal when the release would keep nothing."""
    from anonymizers.longitudinal.framework import NothingToRelease
    try:
        return run(pairs, system)
    except NothingToRelease as refusal:
        return {"below_root_pct": 0.0, "refused": refusal.problem}


def figures() -> dict:
    if not SYNPUF.is_dir() or not GEM.is_file():
        return {"lda": f"skipped: {SYNPUF} or {GEM} not found"}
    pairs = synpuf_pairs(limit=PATIENTS)
    mapping = gem_forward(pd.read_csv(GEM, dtype=str), sources=pairs["code"].unique())
    cohorts = synpuf_cohorts(pairs)
    return {"lda": {name: case_lda(cohorts[name], mapping) for name in COHORTS}}


def main() -> dict:
    return run_benchmark("icd10", figures, k=K, seed=SEED, patients=PATIENTS,
                         gem=str(GEM.name), must_keep=MUST_KEEP)


if __name__ == "__main__":
    main()
