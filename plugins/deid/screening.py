"""HHP screening (seed 004 section 2) of the extract, one member range per task.

A member's removal depends on that member's claims alone, so the members
split into ranges that separate tasks screen:

- ``plan``: the extract's member ids, sorted, cut into ranges of
  ``batch_members``; one COPY of the per-claim table
  (sql/extract_claims_hhp.sql), streamed, each block's rows appended to its
  range's Parquet file.  Ids stay in staging (never in XCom).
- ``batch``: screen one range's claims (no database work: the tasks of a
  stage compete only for CPU); the removed members go to staging.
- ``combine``: drop the removed members' rows from the extract, streaming
  it one row group at a time.

The removed set, and so the screened extract, is the same for any range size.
``load_policy(name)`` reads the policy a release file names
(``deid.releases.SCREENING_POLICIES``: ``hhp-2012-v1`` in ICD-9-CM,
``hhp-2012-icd10-v1`` in ICD-10-CM); ``batch`` takes it or its name.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deid import extract as extract_mod
from deid import parquet_io as pio
from deid import staging
from deid.warehouse import connect

PLAN = staging.SCREEN_RANGES  # an alias for tests/integration/test_screening_ranges.py


def plan(run, batch_members: int, scope: str = "TRUE", codes=None) -> list[dict]:
    """Member ranges of at most ``batch_members`` members, as few as that allows
    and of equal size (within one member), and each range's claims in
    staging, their codes checked as ``codes`` (a ``deid.releases.CodePolicy``;
    ICD-9-CM's by default) says; returns ``{"index": i}`` per range.  Equal ranges keep the last
    one from being a short task that leaves a worker idle."""
    ids = pio.distinct(run.path(staging.CLAIMS), "patient_id").tolist()
    size = staging.batch_size(batch_members, len(ids))
    n = -(-len(ids) // size)
    cuts = [j * len(ids) // n for j in range(n + 1)]
    ranges = [(ids[lo], ids[hi - 1]) for lo, hi in zip(cuts, cuts[1:])]
    run.write_json(staging.SCREEN_RANGES, ranges)
    _split_claims(run, scope, [hi for _, hi in ranges], codes)
    return [{"index": i} for i in range(len(ranges))]


def _split_claims(run, scope: str, highs: list[str], codes=None) -> None:
    """COPY the per-claim table once; member ``m`` goes to the first range whose
    last id is >= m (members after the last range are not in the extract)."""
    query = extract_mod.claims_query(scope)
    schema = extract_mod.CLAIMS_SCHEMA
    bounds = np.array(highs, dtype=str)
    writers = [pq.ParquetWriter(run.path(staging.screen_claims(i)), schema,
                                compression="zstd") for i in range(len(highs))]
    try:
        with connect(readonly=True) as conn, conn.cursor() as cur, extract_mod.copy_out(
                cur, f"COPY ({query}) TO STDOUT WITH (FORMAT csv)") as csv:
            if not csv.peek(1):
                return
            for block in extract_mod.claims_blocks(csv, "the screening extract",
                                                   codes or extract_mod.default_codes()):
                member = np.asarray(block.column("member_id").to_numpy(), dtype=str)
                where = np.searchsorted(bounds, member, side="left")
                for i in np.unique(where[where < len(highs)]).tolist():
                    writers[i].write_table(block.filter(pa.array(where == i)))
    finally:
        for w in writers:
            w.close()


def load_policy(name: str):
    """The bundled screening policy called ``name``; ``InputError`` naming the
    known policies for any other name."""
    from anonymizers.claims.screening import named_policy

    return named_policy(name)


def batch(run, policy, index: int) -> dict:
    """Screen the members of range ``index`` with ``policy`` (a ScreeningPolicy
    or a bundled name); their removed ids go to staging."""
    from anonymizers.claims import screen as run_screen

    policy = load_policy(policy) if isinstance(policy, str) else policy

    # dates as datetime64, not Python date objects: validating those as text took a third
    # of a batch's time
    per_claim = pq.read_table(run.path(staging.screen_claims(index))).to_pandas(
        date_as_object=False)
    result = run_screen(per_claim, policy, compare=False)
    removed = pa.array(result.removed_members["member_id"].astype(str).tolist(), pa.string())
    # inputs stay until the run's cleanup, so that a retried task finds them
    pq.write_table(pa.table({"member_id": removed}),
                   run.path(staging.screen_removed(index)))
    return {"index": index, "claims": len(per_claim), "members_removed": len(removed)}


def combine(run, n_batches: int) -> dict:
    """Drop the rows of every removed member from the extract."""
    removed = pa.concat_arrays([pa.array([], pa.string())] + [
        pq.read_table(run.path(staging.screen_removed(i)))["member_id"].combine_chunks()
        .cast(pa.string()) for i in range(n_batches)])
    source = pq.ParquetFile(run.path(staging.CLAIMS))
    out_path = run.path(staging.CLAIMS_SCREENED)
    rows = kept = 0
    with pq.ParquetWriter(out_path, source.schema_arrow, compression="zstd") as writer:
        for group in range(source.num_row_groups):
            table = source.read_row_group(group)
            keep = pc.invert(pc.is_in(table["patient_id"], value_set=removed))
            table = table.filter(keep)
            rows += source.metadata.row_group(group).num_rows
            kept += table.num_rows
            writer.write_table(table)
    out_path.replace(run.path(staging.CLAIMS))  # filtering again on a retry changes nothing
    return {"members_removed": len(removed), "rows_removed": rows - kept, "rows_kept": kept}
