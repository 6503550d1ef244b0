"""Disassociation (seed 001): k^m-anonymity by splitting records into chunks
(HORPART, VERPART, refining), then utility measured on a reconstruction.

No patient id reaches the release: a record survives only as subrecords of
its cluster's chunks.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from deid import parquet_io as pio
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
STEPS = ("plan", "disassociate", "combine", "verify_batch", "measure")
MAPPED = {"disassociate": "plan", "verify_batch": "plan"}  # one task per batch of the plan
AFTER = {"measure": "combine"}  # measuring and verifying the batches run side by side
BLOCKS = ("clusters", "record_chunks", "item_chunks", "shared_chunks", "shared_chunk_clusters")
TABLE_TYPES = {"code": "string"}  # every other column is an int64 id or size
ID_COLUMNS = {"record_chunks": ("cluster_id", "chunk_id", "subrecord_id"),
              "item_chunks": ("cluster_id",), "shared_chunks": ("shared_id", "subrecord_id")}


RECORD_COLUMNS = ["patient_id", "code"]
RECORD_TYPES = {"patient_id": "string", "code": "string"}


def _policy(params, claims):
    """The utility policy named in ``params`` (None: none), over the codes of ``claims``."""
    name = params.get("utility_policy", "none")
    if name in (None, "none"):
        return None
    policy = utility_policy(name, pio.distinct(claims, "code"))
    return policy if isinstance(policy, list) else [list(c) for c in policy.constraints]


def _config(params, policy):
    from anonymizers.disassociation import DisassociationConfig

    return DisassociationConfig(params["k"], params["m"],
                                max_cluster_size=params["max_cluster_size"],
                                utility_policy=policy, refine=params["refine"],
                                refine_window=params["refine_window"], seed=params["seed"])


def plan(run, params) -> list[dict]:
    """HORPART over all records (one task, holding them encoded: the claims are
    read a row group at a time), then each batch's records and plan rows to
    staging.  Returns the batches: numbers only, never ids.  Fewer than k
    records raise ``TooFewRecords``: the task, hence the run, fails rather
    than load an empty release."""
    from anonymizers.disassociation.batches import plan_batches

    claims = run.path("claims.parquet")
    policy = _policy(params, claims)
    config = _config(params, policy)
    p = plan_batches(pio.row_groups(claims, RECORD_COLUMNS), config, source="claims.parquet")
    size = staging.batch_size(params["batch_size"], p.n_clusters)
    ranges = p.batches(size, config.refine_window)
    _write_batches(run, p.rows, ranges)
    run.write_json("dis_batches.json", {"ranges": ranges, "policy": policy,
                                        "n_clusters": p.n_clusters, "metrics": p.metrics})
    return [{"index": i, "clusters": hi - lo} for i, (lo, hi) in enumerate(ranges)]


def _write_batches(run, rows: pd.DataFrame, ranges: list) -> None:
    """Batch ``i``'s plan rows to ``dis_plan.b<i>``, and its patients' distinct
    (patient, code) rows, in claims order, to ``dis_records.b<i>``: the claims
    are routed a row group at a time, then each batch file is deduplicated on
    its own (a patient's rows all go to one batch)."""
    batch_of = np.searchsorted([lo for lo, _ in ranges], rows["cluster"].to_numpy(),
                               side="right") - 1
    for i in range(len(ranges)):
        rows[batch_of == i].to_parquet(run.path(f"dis_plan.b{i}.parquet"), index=False)
    patients = pd.Index(rows["patient_id"])
    lookup = batch_of
    paths = {i: run.path(f"dis_records.b{i}.parquet") for i in range(len(ranges))}
    with pio.ParquetAppender(paths, RECORD_TYPES) as out:
        out.append({i: pd.DataFrame({c: pd.Series(dtype="str") for c in RECORD_COLUMNS})
                    for i in paths})  # every file exists, with its schema
        for group in pio.row_groups(run.path("claims.parquet"), RECORD_COLUMNS):
            batch = lookup[patients.get_indexer(group["patient_id"])]
            out.append({i: group[batch == i] for i in np.unique(batch[batch >= 0]).tolist()})
    for path in paths.values():
        pd.read_parquet(path).drop_duplicates(ignore_index=True).to_parquet(path, index=False)


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


def _fragment(run, i: int):
    from anonymizers.disassociation.batches import Fragment
    from anonymizers.disassociation.release import Disassociated

    doc = run.read_json(f"dis_fragment.b{i}.json")
    return Fragment(doc["first"], Disassociated.from_json(doc["release"]), doc["figures"])


def combine(run, params) -> dict:
    """The fragments' tables side by side, one batch at a time (the whole
    release is never in memory), and the release's metrics."""
    from anonymizers.disassociation.batches import Plan, Stitcher

    info = run.read_json("dis_batches.json")
    stitch = Stitcher(Plan(pd.DataFrame(), info["n_clusters"], info["metrics"]))
    with pio.ParquetAppender({b: run.path(f"dis_{b}.parquet") for b in BLOCKS},
                                 TABLE_TYPES) as out:
        for i in range(len(info["ranges"])):
            out.append(stitch.add(_fragment(run, i)))
    metrics = run.small(stitch.metrics())
    run.write_json("method_metrics.json", metrics)
    return metrics


def measure(run, params) -> dict:
    """ARE on W2 and on W1 (frequent itemsets of 1-4 codes at 0.625% support,
    Fig. 17), and MRE per utility constraint and per single code (Fig. 18),
    on a seeded reconstruction (``reconstruct``'s defaults: item-chunk codes
    on one record each, subrecords linked by association; ``reconstruction``
    and ``linking`` in the metrics name the rules), batch by batch (``batch_utility``: each refine
    window drawn with its own generator, so the figures do not depend on
    the batching)."""
    from anonymizers.disassociation import metrics as dm
    from anonymizers.disassociation.batch_utility import (
        BatchedUtility,
        frequent_sets,
        sets_to_enumerate,
    )
    from anonymizers.disassociation.reconstruct import DEFAULT_ITEM_SUPPORT, DEFAULT_LINKING

    info = run.read_json("dis_batches.json")
    n = len(info["ranges"])
    batch = [lambda columns=None, i=i: pd.read_parquet(run.path(f"dis_records.b{i}.parquet"),
                                                       columns=columns) for i in range(n)]
    pairs = sum(sets_to_enumerate(read(["patient_id"])["patient_id"], 2) for read in batch)
    sizes = (1, 2) if pairs <= dm.MAX_ENUMERATED else (1,)  # too many pairs: codes only
    utility = BatchedUtility(pio.distinct(run.path("claims.parquet"), "code"), sizes)
    for read in batch:
        utility.pool(read())
    rng = np.random.default_rng(params["seed"])
    w2 = utility.workload(rng, n_queries=1000)
    frequent = frequent_sets(lambda: (read() for read in batch),
                             dm.w1_support(utility.n_records))
    w1 = [q for qs in dm.w1_chains(frequent, rng).values() for q in qs]
    utility.start(w2, info["policy"], w1)
    for i, read in enumerate(batch):
        fragment = _fragment(run, i)
        utility.add(read(), fragment.release, fragment.first, params["refine_window"],
                    params["seed"])
    single = utility.mre_single_codes()
    out = {"are_w2": utility.are(), "w2_code_set_sizes": "-".join(map(str, sizes)),
           "are_w1": utility.are_w1() if w1 else None, "w1_queries": len(w1),
           "mre_share_in_-5_5_single_codes": dm.share_within(single),
           "mre_share_in_-2.5_2.5_single_codes": dm.share_within(single, -0.025, 0.025),
           "reconstruction": DEFAULT_ITEM_SUPPORT, "linking": DEFAULT_LINKING}
    if info["policy"] is not None:
        mre = utility.mre()
        out["mre_share_in_-5_5"] = dm.share_within(mre)
        out["mre_share_in_-2.5_2.5"] = dm.share_within(mre, -0.025, 0.025)
        # Fig. 18's tail: constraints whose MRE is off by 10% or more either way
        out["mre_share_beyond_10"] = 1.0 - dm.share_within(mre, -0.10, 0.10)
        run.write_json("mre_histogram.json",
                       dm.mre_histogram(mre).set_index("interval")["share"].to_dict())
    metrics = {**run.read_json("method_metrics.json"), **out}
    run.write_json("method_metrics.json", metrics)
    return out


def verify_batch(run, params, batch) -> dict:
    """Guarantee 1 on one batch's part of the release tables (what is
    loaded), refine window by refine window, against the batch's staged
    claims; the verdict to ``dis_verdict.b<i>``, for ``verify``.  A
    release with no cluster is verified whole by ``verify``."""
    from anonymizers.verify.disassociation_tables import verify_batches

    i = batch["index"]
    info = run.read_json("dis_batches.json")
    lo, hi = info["ranges"][i]
    windows = _windows(run, i, lo, hi, params["refine_window"])
    checked, bad = 0, []
    if info["n_clusters"]:
        table = _table_path(run)
        checked, bad = verify_batches(
            ((f"batch {i} window {j}", w) for j, w in enumerate(windows)),
            pd.read_parquet(table("clusters")), pd.read_parquet(table("shared_chunk_clusters")),
            _records_of(run), _chunk_rows(run), _shared_rows(run), params["k"], params["m"])
    run.write_json(f"dis_verdict.b{i}.json", {"windows": [[a, b] for a, b, _ in windows],
                                              "checked": checked, "violations": bad})
    return {"index": i, "checked": checked, "violations": len(bad)}


def verify(run, params) -> list[dict]:
    """Guarantee 1 on the release tables: the split into refine windows is
    checked here (whole clusters and shared chunks, every patient once, and
    the rows no window reads), each batch's windows by its ``verify_batch``
    task, whose verdict must be there and be about the same windows."""
    from anonymizers.verify.disassociation import PROPERTY
    from anonymizers.verify.disassociation_tables import (
        check_split,
        verify_disassociation_tables,
    )
    from anonymizers.verify.verdict import Verdict

    ranges = run.read_json("dis_batches.json")["ranges"]
    windows = [_windows(run, i, lo, hi, params["refine_window"])
               for i, (lo, hi) in enumerate(ranges)]
    claim = [w for part in windows for w in part]
    patients, index = pio.distinct(run.path("claims.parquet"), "patient_id"), _table_index(run)
    if not len(index.clusters):  # nothing released (fewer than k records): check it whole
        return [verify_disassociation_tables(claim, patients, index, _records_of(run),
                                             _chunk_rows(run), _shared_rows(run),
                                             k=params["k"], m=params["m"]).as_dict()]
    bad = check_split(claim, patients, index)
    checked = 0
    for i, part in enumerate(windows):
        path = run.path(f"dis_verdict.b{i}.json")
        if not path.exists():
            bad.append(f"batch {i}: no verdict (its verify_batch task did not run)")
            continue
        doc = run.read_json(path.name)
        if doc["windows"] != [[a, b] for a, b, _ in part]:
            bad.append(f"batch {i}: verified windows {doc['windows']}, the split has others")
        checked += doc["checked"]
        bad += doc["violations"]
    return [Verdict.from_violations(PROPERTY, checked, bad).as_dict()]


def _table_path(run):
    return lambda b: run.path(f"dis_{b}.parquet")


def _table_index(run):
    from anonymizers.verify.disassociation_tables import TableIndex

    table = _table_path(run)
    return TableIndex(
        pd.read_parquet(table("clusters")), pd.read_parquet(table("shared_chunk_clusters")),
        {b: pio.min_max(table(b), "cluster_id") for b in ("record_chunks", "item_chunks")},
        pio.distinct(table("shared_chunks"), "shared_id"),
        {f"{b}.{c}": pio.null_count(table(b), c) for b, cols in ID_COLUMNS.items() for c in cols})


def _records_of(run):
    """``records(patients)``: their distinct staged (patient, code) rows."""
    def records(patients):
        return pio.rows_of(run.path("claims.parquet"), "patient_id", patients,
                           ["patient_id", "code"]).drop_duplicates(ignore_index=True)
    return records


def _chunk_rows(run):
    table = _table_path(run)
    return lambda lo, hi: {b: pio.rows_between(table(b), "cluster_id", lo, hi)
                           for b in ("record_chunks", "item_chunks")}


def _shared_rows(run):
    path = _table_path(run)("shared_chunks")
    return lambda ids: pio.rows_of(path, "shared_id", ids)


def _windows(run, i: int, lo: int, hi: int, window: int) -> list[tuple]:
    """Batch ``i`` (clusters ``lo .. hi - 1``) cut at refine-window boundaries
    (multiples of ``window``; refining joins no clusters across them), with
    each part's patients: the verifier holds one window's attacker sets,
    a quarter of a batch's at the default sizes.  The verifier checks the
    cut (the parts must tile the clusters and no shared chunk may span two)."""
    plan = pd.read_parquet(run.path(f"dis_plan.b{i}.parquet"), columns=["patient_id", "cluster"])
    if lo == hi:  # the one empty batch of a release with no cluster
        return [(lo, hi, plan["patient_id"].to_numpy())]
    cuts = [lo, *range((lo // window + 1) * window, hi, window), hi]
    cluster = plan["cluster"].to_numpy()
    return [(a, b, plan["patient_id"].to_numpy()[(cluster >= a) & (cluster < b)])
            for a, b in zip(cuts, cuts[1:])]


def gates(run, params, source) -> Iterator[tuple]:
    """Per row group of each chunk table, so no gate holds a whole table."""
    import great_expectations as gx

    E = gx.expectations
    vocabulary = sorted(source.codes)
    for name in ("record_chunks", "item_chunks", "shared_chunks"):
        for part in pio.row_groups(run.path(f"dis_{name}.parquet"), ["code"]):
            yield (name, part, [E.ExpectColumnValuesToBeInSet(column="code", value_set=vocabulary),
                                E.ExpectColumnValuesToNotBeNull(column="code")])
    clusters = pd.read_parquet(run.path("dis_clusters.parquet"))
    yield ("clusters", clusters, [
        E.ExpectColumnValuesToBeBetween(column="size", min_value=params["k"]),
        E.ExpectColumnSumToBeBetween(column="size", max_value=len(source.patients))])


def release_tables(run, params, token_key: str) -> dict:
    """The tables as Parquet sources the load streams by row group."""
    return {f"dis_{b}": pio.ParquetFrame(run.path(f"dis_{b}.parquet")) for b in BLOCKS}


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
