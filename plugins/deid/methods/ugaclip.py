"""UGACLIP (seed 000, Algorithm 2): generalize codes within a utility policy,
suppress where that cannot help, until every PPE privacy constraint is held
by at least k released records.

Utility policies by name: the paper's (``pnas2010``, ``pnas2010-k5``, ...),
with dots stripped to match the warehouse's undotted codes, or a
hierarchy-based one (``icd9-level-1/2/3``, seed 001 Section 6.1).
"""

from __future__ import annotations

import pandas as pd

from deid import validation
from deid.secret import pseudonym_key

TITLE = "UGACLIP (generalization and suppression)"
POLICIES = ["none", "pnas2010", "pnas2010-k2", "pnas2010-k5", "pnas2010-k10", "pnas2010-k25",
            "icd9-level-1", "icd9-level-2", "icd9-level-3"]
PARAMS = {
    "utility_policy": {"enum": POLICIES, "default": "icd9-level-2", "title": "Utility policy",
                       "description": "Which codes may be generalized (UGACLIP) or kept together "
                                      "(disassociation): the paper's diseases (Tables S1-S2) "
                                      "or ICD-9 hierarchy levels."},
}


def check(params: dict) -> None:
    """UGACLIP cannot run without a utility policy."""
    if params.get("utility_policy") in (None, "none"):
        raise ValueError("utility_policy: UGACLIP needs a utility policy (not 'none')")
STEPS = ("generalize",)


def _records(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path("claims.parquet"), columns=["patient_id", "code"])
            .drop_duplicates(ignore_index=True))


def utility_policy(name: str, codes) -> object:
    if name.startswith("icd9-level-"):
        from anonymizers.policies import hierarchy_policy

        return hierarchy_policy(codes, int(name.rsplit("-", 1)[1]))
    from anonymizers.ugaclip import load_utility_policy

    return load_utility_policy(name, strip_dots=True)


def generalize(run, params) -> dict:
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip

    records = _records(run)
    policy = run.read_json("policy.json")
    result = ugaclip(records, policy["constraints"],
                     utility_policy(params["utility_policy"], records["code"].unique()),
                     UGACLIPConfig(k=params["k"], seed=params["seed"],
                                   pseudonym_key=pseudonym_key()))
    release = result.to_dict()
    run.write_json("ugaclip.json", release)
    metrics = run.small(result.metrics)
    metrics["suppressed_share"] = (metrics.get("suppressed_occurrences", 0)
                                   / max(len(records), 1))
    run.write_json("method_metrics.json", metrics)
    return metrics


def _tables(run) -> dict[str, pd.DataFrame]:
    release = run.read_json("ugaclip.json")
    items = pd.DataFrame([(i, c) for i, item in enumerate(release["items"]) for c in item],
                         columns=["item_id", "code"])
    index = {tuple(item): i for i, item in enumerate(release["items"])}
    held = pd.DataFrame([(r["patient_id"], index[tuple(item)]) for r in release["records"]
                         for item in r["items"]], columns=["patient_pseudonym", "item_id"])
    return {"ugaclip_items": items, "ugaclip_records": held}


def verify(run, params) -> list[dict]:
    from anonymizers.verify.ugaclip import verify_release

    policy = run.read_json("policy.json")
    return [verify_release(_records(run), run.read_json("ugaclip.json"),
                           policy["constraints"], params["k"]).as_dict()]


def gates(run, params, source) -> list:
    import great_expectations as gx

    tables = _tables(run)
    held = tables["ugaclip_records"]
    E = gx.expectations
    return [
        ("items", tables["ugaclip_items"], [
            E.ExpectTableColumnsToMatchOrderedList(column_list=["item_id", "code"]),
            E.ExpectColumnValuesToBeInSet(column="code", value_set=list(source.codes)),
            E.ExpectColumnValuesToNotBeNull(column="item_id")]),
        ("records", held, [
            E.ExpectTableColumnsToMatchOrderedList(column_list=["patient_pseudonym", "item_id"]),
            E.ExpectColumnValuesToNotBeInSet(column="patient_pseudonym",
                                             value_set=list(source.patients)),
            E.ExpectColumnValuesToNotMatchRegex(column="patient_pseudonym",
                                                regex=validation.DATE_LIKE),
            E.ExpectColumnValuesToBeInSet(column="item_id",
                                          value_set=sorted(set(tables["ugaclip_items"]["item_id"])))]),
    ]


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    return _tables(run)


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    release = run.read_json("ugaclip.json")
    sizes = [len(i) for i in release["items"]]
    fig, ax = plt.subplots(figsize=(6, 3))
    if sizes:
        ax.hist(sizes, bins=range(1, max(sizes) + 2), align="left", rwidth=0.8, log=True)
    ax.set_xlabel("original codes an item stands for")
    ax.set_ylabel("items")
    ax.set_title(f"Generalized items; {len(release['suppressed'])} codes suppressed")
    return [("Sizes of the anonymized items (1 = released as is)", fig)]
