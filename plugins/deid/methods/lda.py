"""LDA (seed 002, Chapter IV): k-anonymity for (ICD, age) trajectories by
MDAV clustering and A-GS (or Baseline) alignment with generalization and
suppression.

Each extracted row is one (code, age at service) pair of a claim; with
``lda_codes`` only those 3-digit categories' codes are kept, which bounds the
trajectories the way the thesis' 50-code datasets do (LDA's clustering costs
about n^2/k alignments).  The service date is not passed on: the thesis'
trajectory is a multiset of (ICD, Age) pairs ordered by age (IV.2.2), so the
pairs of one age are ordered by code, which lets the same codes of two
patients at one age line up in A-GS; ordered by claim date they cross, and on
DE-SynPUF A-GS kept a fraction of the codes at 3-digit or finer
(benchmarks/lda.md).  The verifier gets the same pairs, so it checks that
order.
"""

from __future__ import annotations

import pandas as pd

from deid import validation
from deid.secret import pseudonym_key

TITLE = "LDA (longitudinal ICD-age trajectories)"
PARAMS = {
    "w_icd": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
              "title": "Weight of ICD loss", "description": "w_ICD of A-GS; w_Age = 1 - w_ICD."},
    "alignment": {"enum": ["a-gs", "baseline"], "default": "a-gs", "title": "Alignment",
                  "description": "A-GS (Algorithm 3) or Baseline (Algorithm 2)."},
    "icd_domain": {"enum": ["data", "hierarchy"], "default": "data",
                   "title": "ICD domain of the loss metric",
                   "description": "|A| of Definition 4 for ICD: the data's distinct codes "
                                  "(Table 3's |ICD|) or every ICD-9-CM code."},
    "lda_codes": {"type": "array", "items": {"type": "string",
                                             "pattern": "^[0-9VE][0-9]{2,3}$"},
                  "default": [], "title": "Codes in the trajectories (3-digit categories)",
                  "description": "Keep only these ICD-9 categories' codes; empty: all codes."},
}
STEPS = ("anonymize",)
HISTOGRAMS = ("icd_levels", "age_levels", "ilm_by_level", "alm_by_level")


def _pairs(run, params) -> pd.DataFrame:
    claims = pd.read_parquet(run.path("claims.parquet"), columns=[
        "patient_id", "code", "age_at_service"])
    categories = params.get("lda_codes") or []
    if categories:
        prefix = claims["code"].str[:3].where(~claims["code"].str.startswith("E"),
                                              claims["code"].str[:4])
        claims = claims[prefix.isin(categories)]
    return claims.rename(columns={"age_at_service": "age"}).reset_index(drop=True)


def anonymize(run, params) -> dict:
    from anonymizers.longitudinal import LDAConfig, lda

    result = lda(_pairs(run, params), LDAConfig(
        k=params["k"], w_icd=params["w_icd"], w_age=1 - params["w_icd"],
        alignment=params["alignment"], seed=params["seed"],
        icd_domain=params.get("icd_domain", "data"), pseudonym_key=pseudonym_key()))
    result.records.to_parquet(run.path("released.parquet"), index=False)
    result.pseudonym_map.to_parquet(run.path("key.parquet"), index=False)
    run.write_json("histograms.json", {k: result.metrics[k] for k in HISTOGRAMS})
    metrics = run.small(result.metrics)
    run.write_json("method_metrics.json", metrics)
    return metrics


def verify(run, params) -> list[dict]:
    from anonymizers.verify.longitudinal import verify_lda

    return [verify_lda(pd.read_parquet(run.path("released.parquet")),
                       pd.read_parquet(run.path("key.parquet")), _pairs(run, params),
                       params["k"]).as_dict()]


def gates(run, params, source) -> list:
    import great_expectations as gx

    released = pd.read_parquet(run.path("released.parquet"))
    E = gx.expectations
    return [("released", released, [
        E.ExpectTableColumnsToMatchOrderedList(column_list=["patient_id", "position", "code",
                                                            "age"]),
        E.ExpectColumnValuesToNotBeNull(column="code"),
        E.ExpectColumnValuesToNotBeInSet(column="patient_id",
                                         value_set=list(source.patients)),
        E.ExpectColumnValuesToNotMatchRegex(column="patient_id", regex=validation.DATE_LIKE),
        E.ExpectColumnValuesToMatchRegex(column="age", regex=r"^(\*|\d{1,3}(-\d{1,3})?)$")])]


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    released = pd.read_parquet(run.path("released.parquet"))
    return {"lda_trajectories": released.rename(columns={"patient_id": "patient_pseudonym"})}


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    out = []
    for name, hist in run.read_json("histograms.json").items():
        fig, ax = plt.subplots(figsize=(7, 3))
        labels = list(hist.keys()) if isinstance(hist, dict) else list(range(len(hist)))
        values = list(hist.values()) if isinstance(hist, dict) else list(hist)
        ax.bar(range(len(values)), values)
        ax.set_xticks(range(len(values)), labels, rotation=30, ha="right")
        ax.set_title(name.replace("_", " "))
        what = ("Share of values per generalization level" if name.endswith("levels")
                else "ILM/ALM by the level values were released at")
        out.append((f"{what}: {name} (Figs. 13-14)", fig))
    return out
