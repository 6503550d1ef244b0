"""Disassociation (seed 001): k^m-anonymity by splitting records into chunks
(HORPART, VERPART, refining), then utility measured on a reconstruction.

No patient id reaches the release: a record survives only as subrecords of
its cluster's chunks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError
from deid.methods.ugaclip import PARAMS as UGACLIP_PARAMS
from deid.methods.ugaclip import utility_policy

TITLE = "Disassociation (k^m-anonymity)"
PARAMS = {
    "m": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2, "title": "m",
          "description": "Largest number of codes an attacker is assumed to know."},
    "max_cluster_size": {"type": ["null", "integer"], "minimum": 2, "maximum": 100000,
                         "default": None, "title": "Largest HORPART cluster",
                         "description": "Empty: 2k, as the paper does."},
    "refine": {"type": "boolean", "default": True, "title": "Refine",
               "description": "Move codes of several item chunks into shared chunks (Fig. 10)."},
    "utility_policy": UGACLIP_PARAMS["utility_policy"],  # one form field for both methods
}
STEPS = ("disassociate", "measure")
BLOCKS = ("clusters", "record_chunks", "item_chunks", "shared_chunks", "shared_chunk_clusters")


def _records(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path("claims.parquet"), columns=["patient_id", "code"])
            .drop_duplicates(ignore_index=True))


def _policy(params, codes):
    name = params.get("utility_policy", "none")
    return None if name in (None, "none") else utility_policy(name, codes)


def disassociate(run, params) -> dict:
    from anonymizers.disassociation import DisassociationConfig, disassociate as run_it

    records = _records(run)
    policy = _policy(params, records["code"].unique())
    if policy is not None and not isinstance(policy, list):
        policy = [list(c) for c in policy.constraints]
    result = run_it(records, DisassociationConfig(
        params["k"], params["m"], max_cluster_size=params["max_cluster_size"],
        utility_policy=policy, refine=params["refine"], seed=params["seed"]))
    run.write_json("disassociated.json", result.to_json())
    for name, frame in result.tables().items():
        frame.to_parquet(run.path(f"dis_{name}.parquet"), index=False)
    metrics = run.small(result.metrics)
    run.write_json("method_metrics.json", metrics)
    return metrics


def measure(run, params) -> dict:
    """ARE on W2 and MRE per utility constraint on a seeded reconstruction."""
    from anonymizers.disassociation import metrics as dm
    from anonymizers.disassociation.reconstruct import reconstruct
    from anonymizers.disassociation.release import Disassociated

    records = _records(run)
    original = dm.as_records(records)
    rng = np.random.default_rng(params["seed"])
    try:
        w2, sizes = dm.w2_workload(original, rng, n_queries=1000, sizes=(1, 2)), "1-2"
    except ParameterError:  # records too long to enumerate every pair
        w2, sizes = dm.w2_workload(original, rng, n_queries=1000, sizes=(1,)), "1"
    release = Disassociated.from_json(run.read_json("disassociated.json"))
    drawn = dm.as_records(reconstruct(release, seed=params["seed"]))
    out = {"are_w2": dm.are(original, drawn, w2), "w2_code_set_sizes": sizes}
    policy = _policy(params, records["code"].unique())
    if policy is not None:
        constraints = policy if isinstance(policy, list) else [list(c) for c in policy.constraints]
        mre = dm.mre(original, drawn, constraints)
        out["mre_share_in_-5_5"] = dm.share_within(mre)
        run.write_json("mre_histogram.json",
                       dm.mre_histogram(mre).set_index("interval")["share"].to_dict())
    metrics = {**run.read_json("method_metrics.json"), **out}
    run.write_json("method_metrics.json", metrics)
    return out


def verify(run, params) -> list[dict]:
    from anonymizers.verify.disassociation import verify_disassociation

    return [verify_disassociation(_records(run), run.read_json("disassociated.json"),
                                  k=params["k"], m=params["m"]).as_dict()]


def gates(run, params, claims: pd.DataFrame) -> list:
    import great_expectations as gx

    E = gx.expectations
    vocabulary = sorted(claims["code"].unique())
    out = []
    for name in ("record_chunks", "item_chunks", "shared_chunks"):
        frame = pd.read_parquet(run.path(f"dis_{name}.parquet"))
        out.append((name, frame, [E.ExpectColumnValuesToBeInSet(column="code",
                                                                value_set=vocabulary),
                                  E.ExpectColumnValuesToNotBeNull(column="code")]))
    clusters = pd.read_parquet(run.path("dis_clusters.parquet"))
    out.append(("clusters", clusters, [
        E.ExpectColumnValuesToBeBetween(column="size", min_value=params["k"]),
        E.ExpectColumnSumToBeBetween(column="size", max_value=claims["patient_id"].nunique())]))
    return out


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    return {f"dis_{b}": pd.read_parquet(run.path(f"dis_{b}.parquet")) for b in BLOCKS}


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    path = run.path("mre_histogram.json")
    if not path.exists():
        return []
    hist = run.read_json("mre_histogram.json")
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(range(len(hist)), list(hist.values()))
    ax.set_xticks(range(len(hist)), list(hist.keys()), rotation=45, ha="right")
    ax.set_ylabel("share of utility constraints")
    ax.set_title("MRE of utility constraints on a reconstructed dataset (Figs. 18-20)")
    return [("MRE interval histogram", fig)]
