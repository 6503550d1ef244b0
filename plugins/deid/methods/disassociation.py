"""Disassociation (seed 001): k^m-anonymity by splitting records into chunks
(HORPART, VERPART, refining), then utility measured on a reconstruction.

No patient id reaches the release: a record survives only as subrecords of
its cluster's chunks.

Successive releases (issue 25): stable clusters with retention
(``anonymizers.successive.disassociation``, threat model Section 3.1).  A run
of a release with a published history starts from the state of the last
published run (``deid.history.last_state``): every patient published before
keeps its cluster, a patient who left is kept with the record last published
(staged under its keyed link, ``staging.DIS_RETAINED``), and the arrivals are clustered
by HORPART among themselves; fewer than k arrivals are held back (metric
``held_back``).  The new state (cluster of every published patient and the
records the release was made from) is stored with the load (``state_parts``),
keyed by ``deid.history.link``, never by source id.  A first release (no
stored state) is planned exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from deid import history, staging
from deid import parquet_io as pio
from deid.methods import form
from deid.methods.ugaclip import PARAMS as UGACLIP_PARAMS
from deid.methods.ugaclip import policy_system, utility_policy
from deid.secret import pseudonym_key

TITLE = "Disassociation (k^m-anonymity)"
PARAMS = {
    **form.params("disassociation", ["k", "m", "max_cluster_size", "refine", "refine_window",
                                     "seed"],
                  limits={"max_cluster_size": {"maximum": 100_000},
                          "refine_window": {"maximum": 100_000}},
                  # windows split the work into parallel batches but keep less than
                  # one window (null: the paper's Fig. 10; benchmarks/disassociation.md)
                  m=2, refine_window=256),
    "utility_policy": UGACLIP_PARAMS["utility_policy"],  # one form field for both methods
    "batch_size": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 1024,
                   "title": "Clusters per batch",
                   "description": "HORPART clusters per VERPART/refining task (rounded up to "
                   "whole refine windows). The release does not depend on it."},
    "successive_defence": {
        "type": "boolean", "default": True, "title": "Stable clusters over successive releases",
        "description": "With a published release, keep every published patient in its "
                       "cluster, retain those who left, cluster the arrivals among themselves "
                       "(fewer than k are held back); off: disassociate the whole cohort "
                       "again, which validate refuses when the combination with the earlier "
                       "releases breaks k^m-anonymity."},
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

MEMBERSHIP, RECORDS = "dis_membership", "dis_records"  # the state's parts


def check(params: dict) -> None:
    """A hierarchy utility policy must be over the release's code system."""
    if params.get("utility_policy") not in (None, "none"):
        policy_system(params["utility_policy"], params.get("code_system", "icd9cm"),
                      params.get("gem"))


def _policy(params, claims, extra_codes=()):
    """The utility policy named in ``params`` (None: none), over the codes of
    ``claims`` (and ``extra_codes``: those of retained records)."""
    name = params.get("utility_policy", "none")
    if name in (None, "none"):
        return None
    codes = pio.distinct(claims, "code")
    if len(extra_codes):
        codes = np.union1d(codes.astype(str), np.asarray(extra_codes, dtype=str))
    policy = utility_policy(name, codes, params.get("code_system", "icd9cm"), params.get("gem"))
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
    than load an empty release.  A release with a stored state is planned
    under stable clusters (``_stable_plan``)."""
    from anonymizers.disassociation.batches import plan_batches, window_of

    claims = run.path(staging.CLAIMS)
    key = pseudonym_key()
    since, frames = history.last_state(run.release, run.run_id)
    stable = params.get("successive_defence", True) and MEMBERSHIP in frames and RECORDS in frames
    previous = _state_in(frames, claims, key) if stable else None
    retained = pd.DataFrame({c: pd.Series(dtype="str") for c in RECORD_COLUMNS})
    if previous is None:
        policy = _policy(params, claims)
        config = _config(params, policy)
        p = plan_batches(pio.row_groups(claims, RECORD_COLUMNS), config, source=staging.CLAIMS)
        held, successive = [], {}
    else:
        p, retained, held, successive = _stable_plan(run, params, previous)
        policy = successive.pop("policy")
        config = _config(params, policy)
    size = staging.batch_size(params["batch_size"], p.n_clusters)
    ranges = p.batches(size, config.refine_window)
    _write_batches(run, p.rows, ranges, retained)
    pd.DataFrame({"patient_id": pd.Series(sorted(held), dtype="str")}).to_parquet(
        run.path(staging.DIS_HELD), index=False)
    _write_state(run, len(ranges), set(retained["patient_id"]), key)
    run.write_json(staging.DIS_BATCHES, {"ranges": ranges, "policy": policy,
                                         "n_clusters": p.n_clusters, "metrics": p.metrics,
                                         "window": window_of(config, p.n_clusters)})
    run.write_json(staging.DIS_SUCCESSIVE, {"state_from": since,
                                            "stable_clusters": previous is not None,
                                            **successive})
    return [{"index": i, "clusters": hi - lo} for i, (lo, hi) in enumerate(ranges)]


def _state_in(frames: dict, claims, key: bytes) -> dict:
    """The stored state with the links of this run's patients mapped back to
    their ids; a patient who left keeps its link (it names no patient of
    this run).  A link equal to a source id of this run would make the two
    one patient: refused (it does not happen with hex links and real ids)."""
    ids = pd.Series(pio.distinct(claims, "patient_id")).astype(str)
    back = pd.Series(ids.to_numpy(), index=history.link(ids, key).to_numpy())
    out = {}
    for name in (MEMBERSHIP, RECORDS):
        f = frames[name].astype({"patient_id": str})
        out[name] = f.assign(patient_id=f["patient_id"].map(back).fillna(f["patient_id"]))
    left = pd.Index(frames[MEMBERSHIP]["patient_id"].astype(str)).difference(back.index)
    if len(left.intersection(pd.Index(ids))):
        from anonymizers.errors import InputError

        raise InputError("release history", "a stored link equals a patient id of the claims")
    return out


def _stable_plan(run, params, previous: dict):
    """(Plan, retained records, held-back ids, figures) of a run continuing
    the previous release's clusters (``successive.disassociation.stable_plan``).

    Reading: claims of fewer than k patients are refused as in a first run
    (``TooFewRecords``), although the retained records would fill the
    clusters: such a release would be the earlier one again, with next to
    nothing of the run's own claims, and a plain release of them, which the
    run's utility is reported beside, does not exist."""
    from anonymizers.disassociation import TooFewRecords
    from anonymizers.disassociation.batches import Plan
    from anonymizers.successive.disassociation import stable_plan

    claims = run.path(staging.CLAIMS)
    records = pd.read_parquet(claims, columns=RECORD_COLUMNS).drop_duplicates(ignore_index=True)
    n = records["patient_id"].nunique()
    if n < params["k"]:
        raise TooFewRecords(staging.CLAIMS, n, params["k"])
    published = previous[RECORDS]
    left = published[~published["patient_id"].isin(records["patient_id"])]
    policy = _policy(params, claims, left["code"].unique())
    s = stable_plan(records, _config(params, policy), previous[MEMBERSHIP], published)
    retained = s.records[s.records["patient_id"].isin(s.retained)]
    p = Plan(s.plan.rows[["patient_id", "cluster", "position"]], s.plan.n_clusters,
             s.plan.metrics, s.plan.codes, s.plan.sizes)
    return p, retained, s.held, {**s.figures, "policy": policy}


def _write_batches(run, rows: pd.DataFrame, ranges: list, retained: pd.DataFrame) -> None:
    """Batch ``i``'s plan rows to ``dis_plan.b<i>``, and its patients' distinct
    (patient, code) rows, in claims order, to ``dis_records.b<i>``: the claims
    are routed a row group at a time, then each batch file is deduplicated on
    its own (a patient's rows all go to one batch).  Patients of the claims
    outside the plan (held back) go nowhere; ``retained`` records (patients
    who left, under their links) follow the claims in their batches."""
    batch_of = np.searchsorted([lo for lo, _ in ranges], rows["cluster"].to_numpy(),
                               side="right") - 1
    for i in range(len(ranges)):
        rows[batch_of == i].to_parquet(run.path(staging.dis_plan(i)), index=False)
    patients = pd.Index(rows["patient_id"])
    lookup = np.append(batch_of, -1)  # index -1 (not planned) -> batch -1
    paths = {i: run.path(staging.dis_records(i)) for i in range(len(ranges))}
    with pio.ParquetAppender(paths, RECORD_TYPES) as out:
        out.append({i: pd.DataFrame({c: pd.Series(dtype="str") for c in RECORD_COLUMNS})
                    for i in paths})  # every file exists, with its schema
        groups = pio.row_groups(run.path(staging.CLAIMS), RECORD_COLUMNS)
        for group in (*groups, retained[RECORD_COLUMNS]) if len(retained) else groups:
            batch = lookup[patients.get_indexer(group["patient_id"])]
            out.append({i: group[batch == i] for i in np.unique(batch[batch >= 0]).tolist()})
    for path in paths.values():
        pd.read_parquet(path).drop_duplicates(ignore_index=True).to_parquet(path, index=False)
    retained[RECORD_COLUMNS].to_parquet(run.path(staging.DIS_RETAINED), index=False)


def _linked(ids: pd.Series, retained: set, key: bytes) -> pd.Series:
    """Source ids replaced by their keyed links; retained ids are links already."""
    ids = ids.astype(str)
    mine = ~ids.isin(retained)
    return ids.where(~mine, history.link(ids[mine], key)) if mine.any() else ids


def _write_state(run, n_batches: int, retained: set, key: bytes) -> None:
    """The state the next run starts from: every published patient's cluster
    and the records this release is made from, by keyed link."""
    paths = {MEMBERSHIP: run.path(staging.dis_state(MEMBERSHIP)),
             RECORDS: run.path(staging.dis_state(RECORDS))}
    with pio.ParquetAppender(paths, {"patient_id": "string", "code": "string"}) as out:
        for i in range(n_batches):
            plan_rows = pd.read_parquet(run.path(staging.dis_plan(i)),
                                        columns=["patient_id", "cluster"])
            records = pd.read_parquet(run.path(staging.dis_records(i)))
            out.append({MEMBERSHIP: plan_rows.assign(
                            patient_id=_linked(plan_rows["patient_id"], retained, key)),
                        RECORDS: records.assign(
                            patient_id=_linked(records["patient_id"], retained, key))})


def state_parts(run) -> dict[str, pd.DataFrame]:
    """The new state as the load stores it (``deid.history`` parts ``state/<name>``)."""
    return {name: pd.read_parquet(run.path(staging.dis_state(name)))
            for name in (MEMBERSHIP, RECORDS)
            if run.path(staging.dis_state(name)).exists()}


def _retained(run) -> pd.DataFrame:
    path = run.path(staging.DIS_RETAINED)
    return pd.read_parquet(path) if path.exists() else \
        pd.DataFrame({c: pd.Series(dtype="str") for c in RECORD_COLUMNS})


def _staged_inputs(run, key: bytes) -> dict:
    """The release as the CLI's JSON document, stitched from the batches'
    fragments (a fragment's clusters start at its ``first``; its shared
    chunks name its own clusters), the plan's cluster of each record and
    the records (``deid.methods.disassociation`` stages all three)."""
    n = len(run.read_json(staging.DIS_BATCHES)["ranges"])
    clusters, shared = [], []
    for i in range(n):
        fragment = run.read_json(staging.dis_fragment(i))
        first, release = fragment["first"], fragment["release"]
        clusters += release["clusters"]
        shared += [{**s, "clusters": [first + c for c in s["clusters"]]}
                   for s in release.get("shared_chunks", [])]
    membership = pd.concat([pd.read_parquet(run.path(staging.dis_plan(i)),
                                            columns=["patient_id", "cluster"]) for i in range(n)],
                           ignore_index=True)
    truth = pd.concat([pd.read_parquet(run.path(staging.dis_records(i)))
                       for i in range(n)], ignore_index=True)
    return {"release": {"clusters": clusters, "shared_chunks": shared},
            "membership": membership.assign(patient_id=history.link(membership["patient_id"].astype(str), key)),
            "truth": truth.assign(patient_id=history.link(truth["patient_id"].astype(str), key))}


def history_inputs(run, params, key: bytes) -> dict:
    """The cross-release verifier's inputs (``deid.cross_release``): its own
    reading of the staged files, with the retained patients' ids, which are
    links already, kept as they are instead of linked a second time (their
    link must match the one the earlier releases stored)."""
    out = _staged_inputs(run, key)
    retained = pd.Series(_retained(run)["patient_id"].unique(), dtype="str")
    if len(retained):
        back = dict(zip(history.link(retained, key), retained))
        for name in ("membership", "truth"):
            out[name] = out[name].assign(patient_id=out[name]["patient_id"].replace(back))
    return out


def disassociate(run, params, batch) -> dict:
    """VERPART and refining on one batch of clusters (Figs. 9-10)."""
    from anonymizers.disassociation.batches import run_batch

    i = batch["index"]
    info = run.read_json(staging.DIS_BATCHES)
    fragment = run_batch(pd.read_parquet(run.path(staging.dis_records(i))),
                         pd.read_parquet(run.path(staging.dis_plan(i))),
                         _config(params, info["policy"]), info["n_clusters"])
    run.write_json(staging.dis_fragment(i), {"first": fragment.first,
                                             "release": fragment.release.to_json(),
                                             "figures": fragment.figures})
    return {"index": i, "clusters": len(fragment.release.clusters),
            "records": fragment.release.n_records}


def _fragment(run, i: int):
    from anonymizers.disassociation.batches import Fragment
    from anonymizers.disassociation.release import Disassociated

    doc = run.read_json(staging.dis_fragment(i))
    return Fragment(doc["first"], Disassociated.from_json(doc["release"]), doc["figures"])


def combine(run, params) -> dict:
    """The fragments' tables side by side, one batch at a time (the whole
    release is never in memory), and the release's metrics."""
    from anonymizers.disassociation.batches import Plan, Stitcher

    info = run.read_json(staging.DIS_BATCHES)
    stitch = Stitcher(Plan(pd.DataFrame(), info["n_clusters"], info["metrics"]))
    with pio.ParquetAppender({b: run.path(staging.dis_block(b)) for b in BLOCKS},
                                 TABLE_TYPES) as out:
        for i in range(len(info["ranges"])):
            out.append(stitch.add(_fragment(run, i)))
    metrics = run.small({**stitch.metrics(), "held_back": 0, "retained_left": 0,
                         **run.read_json(staging.DIS_SUCCESSIVE)})
    run.write_json(staging.METHOD_METRICS, metrics)
    return metrics


def measure(run, params) -> dict:
    """ARE on W2 and on W1 (frequent itemsets of 1-4 codes at 0.625% support,
    Fig. 17), and MRE per utility constraint and per single code (Fig. 18),
    on a seeded reconstruction (``reconstruct``'s defaults: item-chunk codes
    on one record each, subrecords linked by association; ``reconstruction``
    and ``linking`` in the metrics name the rules), batch by batch (``batch_utility``: each refine
    window drawn with its own generator, so the figures do not depend on
    the batching).  A run under stable clusters also measures, beside them,
    the release a plain run would have made of the same claims
    (``plain_*``: what the defence costs; a defence that releases nothing
    is not one)."""
    from anonymizers.disassociation import metrics as dm

    info = run.read_json(staging.DIS_BATCHES)
    n = len(info["ranges"])
    batch = [lambda columns=None, i=i: pd.read_parquet(run.path(staging.dis_records(i)),
                                                       columns=columns) for i in range(n)]
    out, mre = _utility(batch, lambda i: _fragment(run, i), info["policy"], params,
                        _planned_window(info, params))
    if mre is not None and not np.isnan(mre).all():  # no histogram of nothing
        run.write_json(staging.MRE_HISTOGRAM,
                       dm.mre_histogram(mre).set_index("interval")["share"].to_dict())
    if run.read_json(staging.DIS_SUCCESSIVE).get("stable_clusters"):
        out.update(_plain_utility(run, params, info["policy"]))
    metrics = {**run.read_json(staging.METHOD_METRICS), **out}
    run.write_json(staging.METHOD_METRICS, metrics)
    return out


# the figures read over the utility policy's constraints (none without a policy)
MRE_SHARES = ("mre_share_in_-5_5", "mre_share_in_-2.5_2.5", "mre_share_beyond_10")


def _utility(batch: list, fragment, policy, params,
             window: int) -> tuple[dict, np.ndarray | None]:
    """The figures of ``measure`` for a release: ``batch[i](columns)`` reads
    batch i's records, ``fragment(i)`` its fragment (refined in windows of
    ``window`` clusters); and the MRE per constraint of the utility policy
    (None without one)."""
    from anonymizers.disassociation import metrics as dm
    from anonymizers.disassociation.batch_utility import (
        BatchedUtility,
        sets_to_enumerate,
        w1_chains,
    )
    from anonymizers.disassociation.reconstruct import (
        DEFAULT_ITEM_SUPPORT,
        DEFAULT_LINKING,
    )

    pairs = sum(sets_to_enumerate(read(["patient_id"])["patient_id"], 2) for read in batch)
    sizes = (1, 2) if pairs <= dm.MAX_ENUMERATED else (1,)  # too many pairs: codes only
    codes = np.unique(np.concatenate([read(["code"])["code"].to_numpy(dtype=object)
                                      for read in batch]).astype(str))
    utility = BatchedUtility(codes, sizes)
    for read in batch:
        utility.pool(read())
    rng = np.random.default_rng(params["seed"])
    w2 = utility.workload(rng, n_queries=1000)
    chains = w1_chains(lambda: (read() for read in batch), dm.w1_support(utility.n_records), rng)
    w1 = [q for qs in chains.values() for q in qs]
    utility.start(w2, policy, w1)
    for i, read in enumerate(batch):
        f = fragment(i)
        utility.add(read(), f.release, f.first, window, params["seed"])
    single = utility.mre_single_codes()
    out = {"are_w2": utility.are(), "w2_code_set_sizes": "-".join(map(str, sizes)),
           "are_w1": utility.are_w1() if w1 else None, "w1_queries": len(w1),
           "mre_share_in_-5_5_single_codes": dm.share_within(single),
           "mre_share_in_-2.5_2.5_single_codes": dm.share_within(single, -0.025, 0.025),
           "reconstruction": DEFAULT_ITEM_SUPPORT, "linking": DEFAULT_LINKING}
    mre = None if policy is None else utility.mre()
    if mre is not None:
        out["mre_share_in_-5_5"] = dm.share_within(mre)
        out["mre_share_in_-2.5_2.5"] = dm.share_within(mre, -0.025, 0.025)
        # Fig. 18's tail: constraints whose MRE is off by 10% or more either way
        within_10 = dm.share_within(mre, -0.10, 0.10)
        out["mre_share_beyond_10"] = None if within_10 is None else 1.0 - within_10
    why = _why_not_measured(out, policy)
    return ({**out, staging.NOT_MEASURED: why} if why else out), mre


def _why_not_measured(out: dict, policy) -> dict:
    """Why each figure ``_utility`` could not measure was not: a threshold on
    it fails with this reason (``deid.steps._threshold_verdicts``)."""
    why = {}
    if out["are_w1"] is None:
        why["are_w1"] = "workload W1 is empty: no set of codes reaches its support"
    for name in ("mre_share_in_-5_5_single_codes", "mre_share_in_-2.5_2.5_single_codes"):
        if out[name] is None:
            why[name] = "no code of the release has a relative error (no original support)"
    for name in MRE_SHARES:
        if policy is None:
            why[name] = ("the run has no utility policy (utility_policy: none), so there are "
                         "no utility constraints to measure")
        elif out[name] is None:
            why[name] = "no record holds a code of any constraint of the utility policy"
    return why


PLAIN = "plain_"  # prefix of the figures of the release a plain run would have made


def _plain_utility(run, params, policy) -> dict:
    """``_utility`` of a plain disassociation of this run's claims (HORPART
    over all of them, as a first release), with the same utility policy,
    batched as the release is; its fragments are held in memory, one batch
    at a time."""
    from anonymizers.disassociation.batches import plan_batches, run_batch, window_of

    claims = run.path(staging.CLAIMS)
    config = _config(params, policy)
    p = plan_batches(pio.row_groups(claims, RECORD_COLUMNS), config, source=staging.CLAIMS)
    ranges = p.batches(staging.batch_size(params["batch_size"], p.n_clusters),
                       config.refine_window)
    records = pd.read_parquet(claims, columns=RECORD_COLUMNS).drop_duplicates(ignore_index=True)
    parts = [p.rows[p.rows["cluster"].between(lo, hi - 1)] for lo, hi in ranges]
    batch = [lambda columns=None, rows=rows: records.loc[
        records["patient_id"].isin(rows["patient_id"]), columns or RECORD_COLUMNS]
        for rows in parts]
    out, _ = _utility(batch, lambda i: run_batch(batch[i](), parts[i], config, p.n_clusters),
                      policy, params, window_of(config, p.n_clusters))
    keep = ("are_w2", "are_w1", "mre_share_in_-5_5_single_codes",
            "mre_share_in_-2.5_2.5_single_codes", "mre_share_in_-5_5", "mre_share_in_-2.5_2.5",
            "mre_share_beyond_10")
    return {f"{PLAIN}{k}": out[k] for k in keep if k in out}


def verify_batch(run, params, batch) -> dict:
    """Guarantee 1 on one batch's part of the release tables (what is
    loaded), refine window by refine window, against the batch's staged
    claims; the verdict to ``dis_verdict.b<i>``, for ``verify``.  A
    release with no cluster is verified whole by ``verify``."""
    from anonymizers.verify.disassociation_tables import verify_batches

    i = batch["index"]
    info = run.read_json(staging.DIS_BATCHES)
    lo, hi = info["ranges"][i]
    windows = _windows(run, i, lo, hi, _planned_window(info, params))
    checked, bad = 0, []
    if info["n_clusters"]:
        table = _table_path(run)
        checked, bad = verify_batches(
            ((f"batch {i} window {j}", w) for j, w in enumerate(windows)),
            pd.read_parquet(table("clusters")), pd.read_parquet(table("shared_chunk_clusters")),
            _records_of(run), _chunk_rows(run), _shared_rows(run), params["k"], params["m"])
    run.write_json(staging.dis_verdict(i), {"windows": [[a, b] for a, b, _ in windows],
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

    info = run.read_json(staging.DIS_BATCHES)
    ranges = info["ranges"]
    windows = [_windows(run, i, lo, hi, _planned_window(info, params))
               for i, (lo, hi) in enumerate(ranges)]
    claim = [w for part in windows for w in part]
    patients, index = _published_patients(run), _table_index(run)
    if not len(index.clusters):  # nothing released (fewer than k records): check it whole
        return [verify_disassociation_tables(claim, patients, index, _records_of(run),
                                             _chunk_rows(run), _shared_rows(run),
                                             k=params["k"], m=params["m"]).as_dict()]
    bad = check_split(claim, patients, index)
    checked = 0
    for i, part in enumerate(windows):
        path = run.path(staging.dis_verdict(i))
        if not path.exists():
            bad.append(f"batch {i}: no verdict (its verify_batch task did not run)")
            continue
        doc = run.read_json(path.name)
        if doc["windows"] != [[a, b] for a, b, _ in part]:
            bad.append(f"batch {i}: verified windows {doc['windows']}, the split has others")
        checked += doc["checked"]
        bad += doc["violations"]
    verdicts = [Verdict.from_violations(PROPERTY, checked, bad).as_dict()]
    if run.read_json(staging.DIS_SUCCESSIVE).get("stable_clusters"):
        verdicts.append(_held_back_verdict(run, params))
    return verdicts


HELD_PROPERTY = "stable clusters: only fewer than k arrivals are held back, none published"


def _held_back_verdict(run, params) -> dict:
    """Arrivals are held back only when fewer than k arrived (more form
    clusters of their own), and a held-back patient is in no cluster."""
    from anonymizers.verify.verdict import Verdict

    held = pd.read_parquet(run.path(staging.DIS_HELD))["patient_id"]
    planned = pd.concat([pd.read_parquet(run.path(staging.dis_plan(i)),
                                         columns=["patient_id"])["patient_id"]
                         for i in range(len(run.read_json(staging.DIS_BATCHES)["ranges"]))])
    bad = ([f"{len(held)} arrivals held back, not fewer than k={params['k']}"]
           if len(held) >= params["k"] else []) + \
        ([f"{int(held.isin(planned).sum())} held-back patient(s) are in a cluster"]
         if held.isin(planned).any() else [])
    return Verdict.from_violations(HELD_PROPERTY, len(held), bad).as_dict()


def _table_path(run):
    return lambda b: run.path(staging.dis_block(b))


def _table_index(run):
    from anonymizers.verify.disassociation_tables import TableIndex

    table = _table_path(run)
    return TableIndex(
        pd.read_parquet(table("clusters")), pd.read_parquet(table("shared_chunk_clusters")),
        {b: pio.min_max(table(b), "cluster_id") for b in ("record_chunks", "item_chunks")},
        pio.distinct(table("shared_chunks"), "shared_id"),
        {f"{b}.{c}": pio.null_count(table(b), c) for b, cols in ID_COLUMNS.items() for c in cols})


def _published_patients(run) -> np.ndarray:
    """The patients the release must hold: the claims' patients but the
    arrivals held back, and the retained patients (who left)."""
    ids = pio.distinct(run.path(staging.CLAIMS), "patient_id")
    held = run.path(staging.DIS_HELD)
    if held.exists():
        ids = np.setdiff1d(ids, pd.read_parquet(held)["patient_id"].to_numpy(dtype=object))
    retained = _retained(run)["patient_id"].unique()
    return np.concatenate([ids, retained]) if len(retained) else ids


def _records_of(run):
    """``records(patients)``: their distinct staged (patient, code) rows, and
    the retained records of those who left (as the stored state gave them)."""
    retained = _retained(run)

    def records(patients):
        found = pio.rows_of(run.path(staging.CLAIMS), "patient_id", patients,
                            ["patient_id", "code"])
        if len(retained):
            mine = retained[retained["patient_id"].isin(pd.Index(np.asarray(patients,
                                                                            dtype=object)))]
            found = pd.concat([found, mine], ignore_index=True)
        return found.drop_duplicates(ignore_index=True)
    return records


def _chunk_rows(run):
    table = _table_path(run)
    return lambda lo, hi: {b: pio.rows_between(table(b), "cluster_id", lo, hi)
                           for b in ("record_chunks", "item_chunks")}


def _shared_rows(run):
    path = _table_path(run)("shared_chunks")
    return lambda ids: pio.rows_of(path, "shared_id", ids)


def _planned_window(info: dict, params: dict) -> int:
    """The refine window the plan used (``DIS_BATCHES``); a run planned before
    plans recorded it (a retry across an upgrade) had the parameter's."""
    from anonymizers.disassociation.batches import window_of

    if "window" in info:
        return info["window"]
    return window_of(_config(params, info["policy"]), info["n_clusters"])


def _windows(run, i: int, lo: int, hi: int, window: int) -> list[tuple]:
    """Batch ``i`` (clusters ``lo .. hi - 1``) cut at refine-window boundaries
    (multiples of ``window``; refining joins no clusters across them), with
    each part's patients: the verifier holds one window's attacker sets,
    a quarter of a batch's at the default sizes.  The verifier checks the
    cut (the parts must tile the clusters and no shared chunk may span two)."""
    plan = pd.read_parquet(run.path(staging.dis_plan(i)), columns=["patient_id", "cluster"])
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
    retained = _retained(run)
    vocabulary = sorted(set(source.codes) | set(retained["code"]))
    for name in ("record_chunks", "item_chunks", "shared_chunks"):
        for part in pio.row_groups(run.path(staging.dis_block(name)), ["code"]):
            yield (name, part, [E.ExpectColumnValuesToBeInSet(column="code", value_set=vocabulary),
                                E.ExpectColumnValuesToNotBeNull(column="code")])
    clusters = pd.read_parquet(run.path(staging.dis_block("clusters")))
    yield ("clusters", clusters, [
        E.ExpectColumnValuesToBeBetween(column="size", min_value=params["k"]),
        E.ExpectColumnSumToBeBetween(column="size", max_value=len(source.patients)
                                     + retained["patient_id"].nunique())])


def release_tables(run, params, token_key: str) -> dict:
    """The tables as Parquet sources the load streams by row group."""
    return {f"dis_{b}": pio.ParquetFrame(run.path(staging.dis_block(b))) for b in BLOCKS}


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    path = run.path(staging.MRE_HISTOGRAM)
    if not path.exists():
        return []
    hist = run.read_json(staging.MRE_HISTOGRAM)
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(range(len(hist)), list(hist.values()))
    ax.set_xticks(range(len(hist)), list(hist.keys()), rotation=45, ha="right")
    ax.set_ylabel("share of utility constraints")
    ax.set_title("MRE of utility constraints on a reconstructed dataset (Figs. 18-20)")
    return [("MRE interval histogram", fig)]
