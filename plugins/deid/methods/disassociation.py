"""Disassociation (seed 001): k^m-anonymity by splitting records into chunks
(HORPART, VERPART, refining), then utility measured on a reconstruction.

No patient id reaches the release: a record survives only as subrecords of
its cluster's chunks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError
from deid import staging
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
    "refine_window": {"type": "integer", "minimum": 1, "maximum": 100_000, "default": 256,
                      "title": "Refine window",
                      "description": "Refining joins clusters only within windows of this "
                      "many consecutive clusters."},
    "batch_size": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 1024,
                   "title": "Clusters per batch",
                   "description": "HORPART clusters per VERPART/refining task (rounded up to "
                   "whole refine windows). The release does not depend on it."},
}
STEPS = ("plan", "disassociate", "combine", "measure")
MAPPED = {"disassociate": "plan"}  # one task per batch the plan step returns
BLOCKS = ("clusters", "record_chunks", "item_chunks", "shared_chunks", "shared_chunk_clusters")


def _records(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path("claims.parquet"), columns=["patient_id", "code"])
            .drop_duplicates(ignore_index=True))


def _policy(params, codes):
    name = params.get("utility_policy", "none")
    if name in (None, "none"):
        return None
    policy = utility_policy(name, codes)
    return policy if isinstance(policy, list) else [list(c) for c in policy.constraints]


def _config(params, policy):
    from anonymizers.disassociation import DisassociationConfig

    return DisassociationConfig(params["k"], params["m"],
                                max_cluster_size=params["max_cluster_size"],
                                utility_policy=policy, refine=params["refine"],
                                refine_window=params["refine_window"], seed=params["seed"])


def plan(run, params) -> list[dict]:
    """HORPART over all records (one task), then each batch's records and
    plan rows to staging.  Returns the batches: numbers only, never ids."""
    from anonymizers.disassociation.batches import plan as make_plan

    records = _records(run)
    policy = _policy(params, records["code"].unique())
    config = _config(params, policy)
    p = make_plan(records, config)
    size = staging.batch_size(params["batch_size"], p.n_clusters)
    # no cluster (fewer than k records): one empty batch, so the mapped step still runs
    ranges = p.batches(size, config.refine_window) or [(0, 0)]
    p.rows.to_parquet(run.path("dis_plan.parquet"), index=False)
    for i, (lo, hi) in enumerate(ranges):
        rows = p.rows[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi)]
        rows.to_parquet(run.path(f"dis_plan.b{i}.parquet"), index=False)
        records[records["patient_id"].isin(rows["patient_id"])].to_parquet(
            run.path(f"dis_records.b{i}.parquet"), index=False)
    run.write_json("dis_batches.json", {"ranges": ranges, "policy": policy,
                                        "n_clusters": p.n_clusters, "metrics": p.metrics})
    return [{"index": i, "clusters": hi - lo} for i, (lo, hi) in enumerate(ranges)]


def disassociate(run, params, batch) -> dict:
    """VERPART and refining on one batch of clusters (Figs. 9-10)."""
    from anonymizers.disassociation.batches import run_batch

    i = batch["index"]
    info = run.read_json("dis_batches.json")
    fragment = run_batch(pd.read_parquet(run.path(f"dis_records.b{i}.parquet")),
                         pd.read_parquet(run.path(f"dis_plan.b{i}.parquet")),
                         _config(params, info["policy"]), info["n_clusters"])
    run.write_json(f"dis_fragment.b{i}.json", {"first": fragment.first,
                                               "release": fragment.release.to_json(),
                                               "figures": fragment.figures})
    return {"index": i, "clusters": len(fragment.release.clusters),
            "records": fragment.release.n_records}


def combine(run, params) -> dict:
    """The fragments into one release, its tables and metrics."""
    from anonymizers.disassociation.batches import Fragment, Plan
    from anonymizers.disassociation.batches import combine as join
    from anonymizers.disassociation.release import Disassociated

    info = run.read_json("dis_batches.json")
    fragments = []
    for i in range(len(info["ranges"])):
        doc = run.read_json(f"dis_fragment.b{i}.json")
        fragments.append(Fragment(doc["first"], Disassociated.from_json(doc["release"]),
                                  doc["figures"]))
    p = Plan(pd.DataFrame(), info["n_clusters"], info["metrics"])
    release, metrics = join(p, fragments, _config(params, info["policy"]))
    run.write_json("disassociated.json", release.to_json())
    for name, frame in release.tables().items():
        frame.to_parquet(run.path(f"dis_{name}.parquet"), index=False)
    metrics = run.small(metrics)
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
    constraints = run.read_json("dis_batches.json")["policy"]
    if constraints is not None:
        mre = dm.mre(original, drawn, constraints)
        out["mre_share_in_-5_5"] = dm.share_within(mre)
        run.write_json("mre_histogram.json",
                       dm.mre_histogram(mre).set_index("interval")["share"].to_dict())
    metrics = {**run.read_json("method_metrics.json"), **out}
    run.write_json("method_metrics.json", metrics)
    return out


def verify(run, params) -> list[dict]:
    """Guarantee 1, batch by batch; the batches' claimed records are checked too."""
    from anonymizers.verify.disassociation import verify_disassociation_batches

    rows = pd.read_parquet(run.path("dis_plan.parquet"))
    claim = [(lo, hi, rows.loc[(rows["cluster"] >= lo) & (rows["cluster"] < hi),
                               "patient_id"].to_numpy())
             for lo, hi in run.read_json("dis_batches.json")["ranges"]]
    return [verify_disassociation_batches(_records(run), run.read_json("disassociated.json"),
                                          claim, k=params["k"], m=params["m"]).as_dict()]


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
