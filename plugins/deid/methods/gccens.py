"""GCCens (seed 002, Chapter III): censor repeated codes so that every released
multiset maps to at least k records of the population (k-map).

The population is the release's whole extracted scope; the sample released is
the patients with a claim matching ``gccens_sample`` (default: all of them).
With ``gccens_codes`` (3-digit ICD-9 categories, as in the thesis' study of
250, 272, 401 and 724) codes are rolled up to their category and only those
categories are released; a category's multiplicity is then the number of the
patient's claims carrying it.  Without it every code is released as it is.

Successive releases (issue 25): GCCens's defence is *union-safe* release
(``anonymizers.successive.gccens``, docs/threat-model-successive.md 3.4).
With published releases, a patient's record is capped, code by code, at the
union of what was published of it when the record joined to that union would
be k-mapped to fewer than k population records; the earlier unions are read
from the history's stored releases by keyed link (``deid.history``).  The
metrics give the censoring without the defence beside it
(``*_without_defence``) and ``union_safe_narrowed``.
"""

from __future__ import annotations

import pandas as pd

from anonymizers.codesystems import CATEGORY_PATTERN
from deid import history, staging, validation
from deid.extract import extract_to_parquet
from deid.methods import form
from deid.secret import pseudonym_key

TITLE = "GCCens (repeated codes, k-map)"
PARAMS = {
    **form.params("gccens", {"k": "k", "cap": "caps", "seed": "seed"},
                  # the form offers one cap for every code, or none (the automatic caps)
                  limits={"cap": {"type": ["integer", "null"], "maximum": 1000}}, cap=3),
    "gccens_codes": {"type": "array", "items": {"type": "string", "pattern": CATEGORY_PATTERN},
                     "default": [], "title": "Codes released (3-digit categories)",
                     "description": "ICD-9 categories to release with their repeat counts, "
                                    "e.g. 250, 401; empty: every code as it is."},
    "gccens_sample": {"type": "string", "default": "TRUE", "title": "Sample to release",
                      "description": "SQL filter over the claims (alias c): the patients with a "
                                     "matching claim are released; the whole scope is the "
                                     "population."},
    "successive_defence": {
        "type": "boolean", "default": True, "title": "Union-safe successive releases",
        "description": "With published releases, cap a persisting patient's record at what "
                       "was published of it when the two together would be k-mapped to fewer "
                       "than k population records; off: censor as if alone, which validate "
                       "refuses when the union breaks k-map."},
}
STEPS = ("censor",)


def _population(run, params) -> pd.DataFrame:
    claims = pd.read_parquet(run.path(staging.CLAIMS),
                             columns=["patient_id", "claim_id", "code"])
    categories = params.get("gccens_codes") or []
    if categories:
        from anonymizers.codesystems import category

        cat = category(claims["code"], params.get("code_system", "icd9cm"))
        claims = claims.assign(code=cat)[cat.isin(categories)]
        claims = claims.drop_duplicates(["claim_id", "code"])
    return claims[["patient_id", "code"]].reset_index(drop=True)


def _sample(run, population: pd.DataFrame) -> pd.DataFrame:
    ids = pd.read_parquet(run.path(staging.SAMPLE_IDS))["patient_id"]
    return population[population["patient_id"].isin(ids)]


def censor(run, params) -> dict:
    from anonymizers.censoring import GCCensConfig, gccens
    from deid.scope import checked
    from deid.steps import code_policy  # deid.steps imports the methods

    # each part checked alone first: "x) OR (TRUE" is one valid expression,
    # but joined as text it would let the sample escape the scope
    scope = f"({checked(params['scope'])}) AND ({checked(params['gccens_sample'])})"
    extract_to_parquet(run.path(staging.SAMPLE_CLAIMS), scope, code_policy(run))
    ids = pd.read_parquet(run.path(staging.SAMPLE_CLAIMS), columns=["patient_id"])
    ids.drop_duplicates().to_parquet(run.path(staging.SAMPLE_IDS), index=False)
    run.path(staging.SAMPLE_CLAIMS).unlink()
    population = _population(run, params)
    result, key = gccens(_sample(run, population), population,
                         GCCensConfig(k=params["k"], caps=params["cap"], seed=params["seed"],
                                      pseudonym_key=pseudonym_key()))
    records, cul, metrics = result.records, list(result.cul), run.small(result.metrics)
    earlier = history.published(run.release, run.run_id)
    if earlier and params.get("successive_defence", True):
        records, cul, metrics = _union_safe(run, result, key, population, params["k"], earlier)
    records.to_parquet(run.path(staging.RELEASED), index=False)
    pd.DataFrame({"patient_id": result.patients}).to_parquet(run.path(staging.PATIENTS))
    key.to_parquet(run.path(staging.KEY), index=False)
    run.write_json(staging.FINAL_CAPS, {str(c): int(v) for c, v in result.final_caps.items()})
    run.write_json(staging.METHOD_METRICS, metrics)
    run.write_json(staging.CUL, [float(x) for x in cul])
    return metrics


#: the figures reported beside the release without the defence
COMPARED = ("cul_mean", "cul_median", "cul_total_mean", "instances_released")


def _union_safe(run, result, key, population, k: int, earlier) -> tuple:
    """The release capped at the published unions where needed (module
    docstring); its records, CUL and metrics, with the plain run's beside."""
    from anonymizers.censoring.metrics import distribution
    from anonymizers.successive import gccens as union_safe

    stored = history.earlier_inputs(run.release, earlier)
    unions = union_safe.unions([s["release"] for s in stored], [s["key"] for s in stored])
    links = dict(zip(key["patient_id"].astype(str),
                     history.link(key["original_id"].astype(str), pseudonym_key())))
    held = [(p, dict(zip(g["code"].astype(str), g["count"].astype(int))))
            for p, g in result.records.groupby("patient_id", sort=False)]
    capped = union_safe.narrowed(held, links, unions, union_safe.Population(population), k)
    sizes = dict((p, sum(c.values())) for p, c in held)
    position = {p: i for i, p in enumerate(result.patients.tolist())}
    cul, cul_total = list(result.cul), list(result.cul_total)
    for p, codes in capped.items():
        i, n = position[p], sum(codes.values())
        cul[i] = union_safe.kept_after(cul[i], sizes[p], n)
        cul_total[i] = union_safe.kept_after(cul_total[i], sizes[p], n)
    rows = pd.DataFrame([(p, c, n) for p, codes in capped.items() for c, n in codes.items()],
                        columns=["patient_id", "code", "count"])
    records = pd.concat([result.records[~result.records["patient_id"].isin(capped)], rows],
                        ignore_index=True).astype({"patient_id": object, "code": object,
                                                   "count": "int64"})
    records = records.sort_values(["patient_id", "code"], kind="stable", ignore_index=True)
    before = run.small(result.metrics)
    metrics = {**before, **{f"cul_{s}": v for s, v in distribution(cul).items()},
               **{f"cul_total_{s}": v for s, v in distribution(cul_total).items()},
               "instances_released": int(records["count"].sum()),
               "union_safe_narrowed": len(capped),
               **{f"{m}_without_defence": before[m] for m in COMPARED}}
    return records, cul, metrics


def verify(run, params) -> list[dict]:
    from anonymizers.verify.censoring import verify_gccens

    population = _population(run, params)
    return [verify_gccens(pd.read_parquet(run.path(staging.PATIENTS))["patient_id"].tolist(),
                          pd.read_parquet(run.path(staging.RELEASED)),
                          pd.read_parquet(run.path(staging.KEY)), _sample(run, population),
                          population, params["k"], run.read_json(staging.FINAL_CAPS)).as_dict()]


def gates(run, params, source) -> list:
    released = pd.read_parquet(run.path(staging.RELEASED))
    vocabulary = _population(run, params)["code"].unique()
    return [("released", released, validation.release_records_expectations(
        ["patient_id", "code", "count"], "patient_id", "code", vocabulary,
        source.patients, expected_rows=len(released)))]


def history_inputs(run, params, key: bytes) -> dict:
    """What the cross-release verifier (``deid.cross_release``) reads of this
    run: its records, the key (source ids as keyed links) and the population
    (linked; read of the new release only)."""
    released = pd.read_parquet(run.path(staging.RELEASED))
    records = [{"patient_id": p, "codes": {str(c): int(n) for c, n in zip(g["code"], g["count"])}}
               for p, g in released.groupby("patient_id", sort=False)]
    keys = pd.read_parquet(run.path(staging.KEY))
    population = _population(run, params)
    return {"release": {"records": records},
            "key": keys.assign(original_id=history.link(keys["original_id"].astype(str), key)),
            "population": population.assign(
                patient_id=history.link(population["patient_id"].astype(str), key))}


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    released = pd.read_parquet(run.path(staging.RELEASED))
    return {"gccens_records": released.rename(columns={"patient_id": "patient_pseudonym"})}


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    cul = run.read_json(staging.CUL)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.hist(cul, bins=20, range=(0, 1))
    ax.set_xlabel("CUL of a record (share of its code instances censored)")
    ax.set_ylabel("records")
    ax.set_title("Distribution of code-instance utility loss")
    return [("CUL distribution of the released records", fig)]
