"""Extract: COPY the normalized claims of a release's scope to staging Parquet.

The warehouse streams ``COPY (extract query) TO STDOUT`` through a pipe;
pyarrow reads it in bounded blocks as it comes and writes typed,
zstd-compressed Parquet, checking every block: an empty patient id or a code
that is not ICD-9-CM stops the run naming the source table, the extract row and the
field.  CMS's masked-code placeholders are dropped and counted.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg2
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from anonymizers.errors import InputError
from deid.paths import sql_text
from deid.scope import splice
from deid.synpuf_loader import CMS_PLACEHOLDERS, ICD9_DX
from deid.warehouse import connect

SCHEMA = pa.schema([("patient_id", pa.string()), ("claim_id", pa.string()),
                    ("service_date", pa.date32()), ("age_at_service", pa.int16()),
                    ("code", pa.string())])
BLOCK_BYTES = 32 << 20


def extract_query(scope: str = "TRUE") -> str:
    """The extract query over the release's scope, checked by deid.scope."""
    return splice(sql_text("extract_claims.sql"), scope)


def extract_to_parquet(out: Path, scope: str = "TRUE") -> dict:
    """Run the extract; returns rows, patients and dropped placeholder counts.
    A failed extract leaves no file (a COPY stopped early looks like the end
    of the data to the reader)."""
    query = f"COPY ({extract_query(scope)}) TO STDOUT WITH (FORMAT csv)"
    try:
        with connect(readonly=True) as conn, conn.cursor() as cur, \
                copy_out(cur, query) as csv:
            return _csv_to_parquet(csv, out)
    except BaseException:
        out.unlink(missing_ok=True)
        raise


@contextmanager
def copy_out(cur, sql: str):
    """``COPY ... TO STDOUT`` in a thread, read as a stream from a pipe: the
    server's work and the Parquet writing overlap and no CSV lands on disk."""
    read_fd, write_fd = os.pipe()
    errors: list[BaseException] = []

    def run():
        try:
            with os.fdopen(write_fd, "wb") as sink:
                cur.copy_expert(sql, sink)
        except BaseException as exc:  # noqa: BLE001 - raised in the reading thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    reader = os.fdopen(read_fd, "rb")
    try:
        yield reader
    finally:
        reader.close()  # unblocks the COPY if the reader stopped early
        thread.join()
    if errors:
        raise withheld(errors[0]) from None


def withheld(exc: BaseException) -> BaseException:
    """A data error of the extract with PostgreSQL's message withheld: it may
    quote a source value (an identifier, through a scope's cast)."""
    import psycopg2.errorcodes

    if not isinstance(exc, psycopg2.DataError):
        return exc
    return InputError("release scope", f"the extract query stopped on a data error (SQLSTATE "
                      f"{exc.pgcode} {psycopg2.errorcodes.lookup(exc.pgcode)}), from the "
                      "scope's casts or functions or a source value the query cannot convert; "
                      "PostgreSQL's message is withheld because it may quote a source value")


def _csv_to_parquet(csv, out: Path) -> dict:
    if not csv.peek(1):  # the scope selects nothing
        pq.write_table(SCHEMA.empty_table(), out, compression="zstd")
        return {"rows": 0, "patients": 0, "placeholder_codes_dropped": 0}
    rows = dropped = 0
    patients: set = set()
    with pq.ParquetWriter(out, SCHEMA, compression="zstd") as writer:
        for batch in read_blocks(csv, SCHEMA, "the extract", strings_can_be_null=True):
            table = pa.Table.from_batches([batch])
            table, n_dropped = _check_block(table, rows)
            dropped += n_dropped
            rows += table.num_rows
            patients.update(pc.unique(table["patient_id"]).to_pylist())
            writer.write_table(table)
    return {"rows": rows, "patients": len(patients), "placeholder_codes_dropped": dropped}


def read_blocks(source, schema: pa.Schema, what: str, strings_can_be_null: bool):
    """Record batches of headerless CSV ``source`` typed by ``schema``.  A row
    Arrow cannot parse stops the run without the row's text in the message
    (it would carry patient ids into task logs)."""
    try:
        yield from pacsv.open_csv(source, read_options=pacsv.ReadOptions(
            column_names=schema.names, block_size=BLOCK_BYTES),
            convert_options=pacsv.ConvertOptions(column_types=schema,
                                                 strings_can_be_null=strings_can_be_null))
    except pa.ArrowInvalid as exc:
        reason = str(exc).split(":", 1)[0]
        raise InputError(what, f"the warehouse returned a row that does not fit the schema "
                         f"({reason}; row content withheld)") from None


def _check_block(table: pa.Table, offset: int) -> tuple[pa.Table, int]:
    """Arrow compute over the block; pandas only to name the first bad row."""
    for field in ("patient_id", "claim_id", "service_date", "age_at_service"):
        bad = pc.is_null(table[field])
        if pc.any(bad).as_py():
            _fail(table, offset, bad, field, "empty value")
    code = table["code"]
    placeholder = pc.is_in(code, value_set=pa.array(sorted(CMS_PLACEHOLDERS)))
    valid = pc.fill_null(pc.match_substring_regex(code, ICD9_DX.pattern), False)
    bad_code = pc.and_(pc.invert(valid), pc.invert(placeholder))
    if pc.any(bad_code).as_py():
        _fail(table, offset, bad_code, "code", "not an ICD-9-CM diagnosis code")
    n_placeholders = pc.sum(placeholder).as_py() or 0
    if n_placeholders:
        table = table.filter(pc.invert(placeholder))
    return table, int(n_placeholders)


def _fail(table: pa.Table, offset, bad, field: str, problem: str):
    """Name the table, the extract row and the field; the message goes to task
    logs, so it carries no claim or patient id (the value alone, for codes)."""
    df = table.to_pandas()
    i = int(np.asarray(bad.to_numpy(zero_copy_only=False)).argmax())
    claim_type = str(df["claim_id"].iloc[i]).partition(":")[0]
    value = f": {df[field].iloc[i]!r}" if field == "code" else ""
    raise InputError(f"source.{claim_type}_claims", f"{problem}{value} (row of the extract)",
                     row=offset + i + 1, field=field)


CLAIMS_SCHEMA = pa.schema([("member_id", pa.string()), ("claim_id", pa.string()),
                          ("service_date", pa.date32()), ("age_at_service", pa.int16()),
                          ("sex", pa.string()), ("dx_code", pa.string()),
                          ("other_dx_codes", pa.string()), ("procedure_code", pa.string()),
                          ("length_of_stay", pa.int32()), ("birth_date", pa.date32())])


def claims_query(scope: str = "TRUE") -> str:
    """sql/extract_claims_hhp.sql: one row per claim, for HHP screening and method."""
    return splice(sql_text("extract_claims_hhp.sql"), scope)


def extract_claims_table(out: Path, scope: str = "TRUE") -> dict:
    """One row per claim for the HHP method (sql/extract_claims_hhp.sql), by COPY."""
    query = claims_query(scope)
    csv_path = out.with_suffix(".csv")
    try:
        with connect(readonly=True) as conn, conn.cursor() as cur, open(csv_path, "w") as f:
            try:
                cur.copy_expert(f"COPY ({query}) TO STDOUT WITH (FORMAT csv)", f)
            except psycopg2.DataError as exc:
                raise withheld(exc) from None
        if csv_path.stat().st_size == 0:
            pq.write_table(CLAIMS_SCHEMA.empty_table(), out, compression="zstd")
            return {"claims": 0}
        table = pa.Table.from_batches(
            list(read_blocks(csv_path, CLAIMS_SCHEMA, "the claims extract", False)),
            schema=CLAIMS_SCHEMA)
        pq.write_table(table, out, compression="zstd")
        return {"claims": table.num_rows}
    finally:
        csv_path.unlink(missing_ok=True)
