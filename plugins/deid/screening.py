"""HHP screening (seed 004 section 2) of the extract, one member range per task.

A member's removal depends on that member's claims alone, so the members
split into ranges that separate tasks screen:

- ``plan``: the extract's member ids, sorted, cut into ranges of
  ``batch_members``; the ranges stay in staging (ids never go to XCom).
- ``batch``: COPY the per-claim table of one range (sql/extract_claims_hhp.sql
  with the range added to the scope) and screen it; the removed members go
  to staging.
- ``combine``: drop the removed members' rows from the extract, streaming
  it one row group at a time.

The removed set, and so the screened extract, is the same for any range size.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deid import extract as extract_mod

PLAN = "screen_ranges.json"
MAX_BATCHES = 1024  # Airflow's default max_map_length


def plan(run, batch_members: int) -> list[dict]:
    """Member ranges of about ``batch_members`` members; returns ``{"index": i}`` per range."""
    ids = pq.read_table(run.path("claims.parquet"), columns=["patient_id"])["patient_id"]
    ids = pc.unique(ids).sort().to_pylist()
    size = max(batch_members, -(-len(ids) // MAX_BATCHES), 1)
    ranges = [(ids[i], ids[min(i + size, len(ids)) - 1]) for i in range(0, len(ids), size)]
    run.write_json(PLAN, ranges)
    return [{"index": i} for i in range(len(ranges))]


def range_scope(scope: str, lo: str, hi: str) -> str:
    """The release scope restricted to member ids ``lo..hi`` (byte order, as Python sorts)."""
    def literal(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"
    return (f"({scope}) AND c.desynpuf_id COLLATE \"C\" >= {literal(lo)} "
            f"AND c.desynpuf_id COLLATE \"C\" <= {literal(hi)}")


def batch(run, policy, scope: str, index: int) -> dict:
    """Screen the members of range ``index``; their removed ids go to staging."""
    from anonymizers.claims import screen as run_screen

    lo, hi = run.read_json(PLAN)[index]
    claims_path = run.path(f"screen_claims.b{index}.parquet")
    extract_mod.extract_claims_table(claims_path, range_scope(scope, lo, hi))
    per_claim = pq.read_table(claims_path).to_pandas()
    claims_path.unlink()
    result = run_screen(per_claim, policy, compare=False)
    removed = result.removed_members[["member_id"]]
    removed.to_parquet(run.path(f"screen_removed.b{index}.parquet"), index=False)
    return {"index": index, "claims": len(per_claim), "members_removed": len(removed)}


def combine(run, n_batches: int) -> dict:
    """Drop the rows of every removed member from the extract."""
    removed = pa.concat_arrays([
        pq.read_table(run.path(f"screen_removed.b{i}.parquet"))["member_id"].combine_chunks()
        for i in range(n_batches)]) if n_batches else pa.array([], pa.string())
    source = pq.ParquetFile(run.path("claims.parquet"))
    out_path = run.path("claims.screened.parquet")
    rows = kept = 0
    with pq.ParquetWriter(out_path, source.schema_arrow, compression="zstd") as writer:
        for group in range(source.num_row_groups):
            table = source.read_row_group(group)
            keep = pc.invert(pc.is_in(table["patient_id"], value_set=removed))
            table = table.filter(keep)
            rows += source.metadata.row_group(group).num_rows
            kept += table.num_rows
            writer.write_table(table)
    out_path.replace(run.path("claims.parquet"))
    for i in range(n_batches):
        run.path(f"screen_removed.b{i}.parquet").unlink()
    return {"members_removed": len(removed), "rows_removed": rows - kept, "rows_kept": kept}
