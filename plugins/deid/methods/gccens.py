"""GCCens (seed 002, Chapter III): censor repeated codes so that every released
multiset maps to at least k records of the population (k-map).

The population is the release's whole extracted scope; the sample released is
the patients with a claim matching ``gccens_sample`` (default: all of them).
With ``gccens_codes`` (3-digit ICD-9 categories, as in the thesis' study of
250, 272, 401 and 724) codes are rolled up to their category and only those
categories are released; a category's multiplicity is then the number of the
patient's claims carrying it.  Without it every code is released as it is.
"""

from __future__ import annotations

import pandas as pd

from deid import validation
from deid.extract import extract_to_parquet
from deid.secret import pseudonym_key

TITLE = "GCCens (repeated codes, k-map)"
PARAMS = {
    "cap": {"type": ["null", "integer"], "minimum": 0, "maximum": 1000, "default": 3,
            "title": "Cap on copies of a code",
            "description": "Most copies of one code a released record may hold; empty: the "
                           "sample's largest count of each code (the thesis' automatic caps)."},
    "gccens_codes": {"type": "array", "items": {"type": "string", "pattern": "^[0-9VE][0-9]{2,3}$"},
                     "default": [], "title": "Codes released (3-digit categories)",
                     "description": "ICD-9 categories to release with their repeat counts, "
                                    "e.g. 250, 401; empty: every code as it is."},
    "gccens_sample": {"type": "string", "default": "TRUE", "title": "Sample to release",
                      "description": "SQL filter over the claims (alias c): the patients with a "
                                     "matching claim are released; the whole scope is the "
                                     "population."},
}
STEPS = ("censor",)


def _population(run, params) -> pd.DataFrame:
    claims = pd.read_parquet(run.path("claims.parquet"),
                             columns=["patient_id", "claim_id", "code"])
    categories = params.get("gccens_codes") or []
    if categories:
        width = claims["code"].str.startswith("E").map({True: 4, False: 3})
        cat = pd.Series([c[:w] for c, w in zip(claims["code"], width)], index=claims.index)
        claims = claims.assign(code=cat)[cat.isin(categories)]
        claims = claims.drop_duplicates(["claim_id", "code"])
    return claims[["patient_id", "code"]].reset_index(drop=True)


def _sample(run, population: pd.DataFrame) -> pd.DataFrame:
    ids = pd.read_parquet(run.path("sample_ids.parquet"))["patient_id"]
    return population[population["patient_id"].isin(ids)]


def censor(run, params) -> dict:
    from anonymizers.censoring import GCCensConfig, gccens
    from deid.scope import checked

    # each part checked alone first: "x) OR (TRUE" is one valid expression,
    # but joined as text it would let the sample escape the scope
    scope = f"({checked(params['scope'])}) AND ({checked(params['gccens_sample'])})"
    extract_to_parquet(run.path("sample_claims.parquet"), scope)
    ids = pd.read_parquet(run.path("sample_claims.parquet"), columns=["patient_id"])
    ids.drop_duplicates().to_parquet(run.path("sample_ids.parquet"), index=False)
    run.path("sample_claims.parquet").unlink()
    population = _population(run, params)
    result, key = gccens(_sample(run, population), population,
                         GCCensConfig(k=params["k"], caps=params["cap"], seed=params["seed"],
                                      pseudonym_key=pseudonym_key()))
    result.records.to_parquet(run.path("released.parquet"), index=False)
    pd.DataFrame({"patient_id": result.patients}).to_parquet(run.path("patients.parquet"))
    key.to_parquet(run.path("key.parquet"), index=False)
    run.write_json("final_caps.json", {str(c): int(v) for c, v in result.final_caps.items()})
    metrics = run.small(result.metrics)
    run.write_json("method_metrics.json", metrics)
    run.write_json("cul.json", [float(x) for x in result.cul])
    return metrics


def verify(run, params) -> list[dict]:
    from anonymizers.verify.censoring import verify_gccens

    population = _population(run, params)
    return [verify_gccens(pd.read_parquet(run.path("patients.parquet"))["patient_id"].tolist(),
                          pd.read_parquet(run.path("released.parquet")),
                          pd.read_parquet(run.path("key.parquet")), _sample(run, population),
                          population, params["k"], run.read_json("final_caps.json")).as_dict()]


def gates(run, params, source) -> list:
    released = pd.read_parquet(run.path("released.parquet"))
    vocabulary = _population(run, params)["code"].unique()
    return [("released", released, validation.release_records_expectations(
        ["patient_id", "code", "count"], "patient_id", "code", vocabulary,
        source.patients, expected_rows=len(released)))]


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    released = pd.read_parquet(run.path("released.parquet"))
    return {"gccens_records": released.rename(columns={"patient_id": "patient_pseudonym"})}


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    cul = run.read_json("cul.json")
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(cul, bins=20, range=(0, 1))
    ax.set_xlabel("CUL of a record (share of its code instances censored)")
    ax.set_ylabel("records")
    ax.set_title("Distribution of code-instance utility loss")
    return [("CUL distribution of the released records", fig)]
