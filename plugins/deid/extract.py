"""Extract: COPY the normalized claims of a release's scope to staging Parquet.

The warehouse streams ``COPY (extract query) TO STDOUT`` through a pipe;
pyarrow reads it in bounded blocks as it comes and writes typed,
zstd-compressed Parquet, checking every block: an empty patient id stops the
run naming the source table, the extract row and the field.  CMS's
masked-code placeholders are dropped and counted.

Codes follow the release file's ``CodePolicy`` (``deid.releases``): each is
normalised (dots, case, spaces) and checked against the code system
(``anonymizers.io.clean_codes`` over ``anonymizers.codesystems``, the CLI's
own code).  A code whose source carries CMS's version flag (the RIF's
``*_VRSN_CD``: ``'9'`` ICD-9-CM, ``'0'`` ICD-10-CM) is in the system its
flag names; an unflagged code (DE-SynPUF) is in the release's system.  A
code of the other system is refused (``mixed: refuse``) or mapped through
the GEM (``mixed: map-to-icd10``); an unknown code stops the run, or is
counted and dropped with ``drop_unknown``.  A refusal is one line naming
the source table, the extract row and the field, never the value.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import psycopg2
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from anonymizers.codesystems import CMS_PLACEHOLDERS, legacy_icd9
from anonymizers.errors import InputError
from deid.paths import sql_text
from deid.scope import splice
from deid.warehouse import connect

if TYPE_CHECKING:  # deid.releases imports the methods, which import this module
    from deid.releases import CodePolicy

SCHEMA = pa.schema([("patient_id", pa.string()), ("claim_id", pa.string()),
                    ("service_date", pa.date32()), ("age_at_service", pa.int16()),
                    ("code", pa.string())])
# as the query returns it: each code with its CMS version flag (NULL: none)
READ_SCHEMA = SCHEMA.append(pa.field("code_version", pa.string()))
BLOCK_BYTES = 32 << 20
FLAG = {"icd9cm": "9", "icd10cm": "0"}  # anonymizers.codesystems.VERSION_FLAGS, inverted


def extract_query(scope: str = "TRUE") -> str:
    """The extract query over the release's scope, checked by deid.scope."""
    return splice(sql_text("extract_claims.sql"), scope)


def default_codes() -> CodePolicy:
    """ICD-9-CM, refusing other systems and unknown codes: a release file's defaults."""
    from deid.releases import CodePolicy

    return CodePolicy()


def extract_to_parquet(out: Path, scope: str = "TRUE", codes: CodePolicy | None = None) -> dict:
    """Run the extract; returns rows, patients and the codes dropped (CMS
    placeholders; unknown codes with ``drop_unknown``) or mapped into the
    release's code system.  A failed extract leaves no file (a COPY stopped
    early looks like the end of the data to the reader)."""
    query = f"COPY ({extract_query(scope)}) TO STDOUT WITH (FORMAT csv)"
    try:
        with connect(readonly=True) as conn, conn.cursor() as cur, \
                copy_out(cur, query) as csv:
            return _csv_to_parquet(csv, out, codes or default_codes())
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


def _csv_to_parquet(csv, out: Path, codes: CodePolicy) -> dict:
    counts = {"placeholder_codes_dropped": 0, "unknown_codes_dropped": 0, "codes_mapped": 0}
    if not csv.peek(1):  # the scope selects nothing
        pq.write_table(SCHEMA.empty_table(), out, compression="zstd")
        return {"rows": 0, "patients": 0, **counts, "code_system": codes.code_system}
    read = rows = 0
    patients: set = set()
    last: tuple = (None, set())  # the previous block's last claim and its codes
    with pq.ParquetWriter(out, SCHEMA, compression="zstd") as writer:
        for batch in read_blocks(csv, READ_SCHEMA, "the extract", strings_can_be_null=True):
            table = pa.Table.from_batches([batch])
            table, block_counts = _check_block(table, read, codes)
            read += batch.num_rows
            if block_counts["codes_mapped"]:
                table = _distinct_codes(table, last)
            if table.num_rows:
                claim = table["claim_id"][-1].as_py()
                last = (claim, set(table.filter(pc.equal(table["claim_id"], claim))["code"]
                                   .to_pylist()))
            for name, n in block_counts.items():
                counts[name] += n
            rows += table.num_rows
            patients.update(pc.unique(table["patient_id"]).to_pylist())
            writer.write_table(table)
    return {"rows": rows, "patients": len(patients), **counts,
            "code_system": codes.code_system}


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


def _check_block(table: pa.Table, offset: int, codes: CodePolicy) -> tuple[pa.Table, dict]:
    """Arrow compute over the block; pandas only for the codes' check (once
    per distinct code) and to name the first bad row."""
    for field in ("patient_id", "claim_id", "service_date", "age_at_service"):
        bad = pc.is_null(table[field])
        if pc.any(bad).as_py():
            _fail(table["claim_id"], offset, _first(bad), field, "empty value")
    placeholder = pc.is_in(table["code"], value_set=pa.array(sorted(CMS_PLACEHOLDERS)))
    n_placeholders = int(pc.sum(placeholder).as_py() or 0)
    rows, claim_ids = np.arange(table.num_rows), table["claim_id"]
    if n_placeholders:
        rows = np.flatnonzero(~placeholder.to_numpy(zero_copy_only=False))
        table = table.filter(pc.invert(placeholder))
    clean = clean_block_codes(table["code"], table["code_version"], codes, claim_ids,
                              offset, rows, "code", "code_version")
    table = table.filter(pa.array(clean.keep)).drop_columns(["code_version"])
    table = table.set_column(table.schema.get_field_index("code"), "code",
                             pa.array(clean.codes, pa.string()))
    return table, {"placeholder_codes_dropped": n_placeholders,
                   "unknown_codes_dropped": clean.dropped, "codes_mapped": clean.mapped}


def _distinct_codes(table: pa.Table, last: tuple) -> pa.Table:
    """One row per claim and code, as the query gives them: two source codes
    mapped to one target code leave one row.  A claim's rows are contiguous
    (the query's lateral join), so only the previous block's last claim
    (``last``: its id and codes) can hold a code of this block's first."""
    frame = table.select(["claim_id", "code"]).to_pandas()
    again = frame.duplicated().to_numpy() | (
        frame["claim_id"].eq(last[0]) & frame["code"].isin(last[1])).to_numpy()
    return table.filter(pa.array(~again)) if again.any() else table


class BlockCodes:
    """A block's codes as the release's code system holds them: ``codes``
    (normalised or mapped) of the rows ``keep`` marks, and the counts."""

    def __init__(self, codes, keep, dropped: int, mapped: int):
        self.codes, self.keep, self.dropped, self.mapped = codes, keep, dropped, mapped


def clean_block_codes(code, version, codes: CodePolicy, claim_ids, offset: int,
                      rows: np.ndarray, field: str, version_field: str) -> BlockCodes:
    """``anonymizers.io.clean_codes`` over one block's codes and version flags
    (Arrow arrays; a null flag is the release's system), once per distinct
    (code, flag): the distinct pairs keep the order of their first rows, so
    the first pair refused is the first row refused.  A refusal names the
    source table of the row's claim, its extract row (``offset`` + its block
    position ``rows[i]`` + 1) and ``field`` (or ``version_field``).

    Reading chosen for ICD-9-CM releases (``legacy_icd9``): an ICD-9-CM code
    that CMS's final (v32) tabular list lacks but that has ICD-9-CM's form is
    kept, normalised, as the extract kept it before code systems existed:
    DE-SynPUF writes such codes (``0421``, ``30511``, ``71860``), and an ICD-9
    release's output must not change.  No ICD-10-CM release keeps them: mapped
    through the GEM, they are unknown codes."""
    from anonymizers.codesystems import NAMES, RELEASE_FILE_REFUSAL, normalize
    from anonymizers.io import CODE_VERSION, clean_codes

    if isinstance(code, pa.ChunkedArray):
        code, version = code.combine_chunks(), version.combine_chunks()
    flags = pc.fill_null(version, FLAG[codes.code_system])
    pairs = pc.dictionary_encode(pc.binary_join_element_wise(code, flags, "\x1f"))
    index = pairs.indices.to_numpy(zero_copy_only=False)
    split = [p.rpartition("\x1f") for p in pairs.dictionary.to_pylist()]
    frame = pd.DataFrame({"code": [c for c, _, _ in split],
                          CODE_VERSION: [f for _, _, f in split], "position": range(len(split))})
    first = np.unique(index, return_index=True)[1]  # the first row of each pair
    legacy = legacy_icd9(frame["code"], frame[CODE_VERSION]) \
        if codes.code_system == "icd9cm" else np.zeros(len(frame), dtype=bool)
    checked = frame[~legacy]
    try:
        clean = clean_codes(checked, "the extract", codes.code_system, codes.drop_unknown,
                            codes.mixed, codes.gem, refusal=RELEASE_FILE_REFUSAL)
    except InputError as exc:
        if exc.row is None:
            raise
        i = int(first[checked["position"].iloc[exc.row - 1]])
        where = field if exc.field == "code" else version_field
        problem = exc.problem
        if where == field and not version[i].is_valid:  # no flag: the release file's system
            problem = (f"not a code of {NAMES[codes.code_system]} (the release file's "
                       "code_system), nor after removing dots, spaces and case")
        _fail(claim_ids, offset, int(rows[i]), where, problem)
    out = np.empty(len(frame), dtype=object)
    kept = np.zeros(len(frame), dtype=bool)
    kept[clean.table["position"].to_numpy()] = True
    out[clean.table["position"].to_numpy()] = clean.table["code"].to_numpy(dtype=object)
    out[legacy] = normalize(frame["code"][legacy].to_numpy(dtype=object))
    kept |= legacy
    foreign = (frame[CODE_VERSION] != FLAG[codes.code_system]).to_numpy()
    keep = kept[index]
    return BlockCodes(out[index[keep]], keep, int((~keep).sum()),
                      int((kept & foreign)[index].sum()))


def _first(mask) -> int:
    return int(np.asarray(mask.to_numpy(zero_copy_only=False)).argmax())


def _fail(claim_ids, offset: int, i: int, field: str, problem: str):
    """Name the source table of row ``i``'s claim, the extract row and the
    field; the message goes to task logs, so it carries no claim or patient
    id, nor a code (a diagnosis is patient data)."""
    raise InputError(source_table(claim_ids[i].as_py()), f"{problem} (row of the extract)",
                     row=offset + i + 1, field=field)


def source_table(claim_id: str) -> str:
    """The source table of an extract row's claim id (``<type>:<clm_id>``): a
    DE-SynPUF claims table, or the RIF diagnoses of a ``rif_<type>`` claim."""
    claim_type = str(claim_id).partition(":")[0]
    if claim_type.startswith("rif_"):
        return f"source.rif_diagnoses ({claim_type.removeprefix('rif_')} claims)"
    return f"source.{claim_type}_claims"



CLAIMS_SCHEMA = pa.schema([("member_id", pa.string()), ("claim_id", pa.string()),
                          ("service_date", pa.date32()), ("age_at_service", pa.int16()),
                          ("sex", pa.string()), ("dx_code", pa.string()),
                          ("other_dx_codes", pa.string()), ("procedure_code", pa.string()),
                          ("length_of_stay", pa.int32()), ("birth_date", pa.date32())])
# as the query returns it: the version flags of dx_code and of each other code
CLAIMS_READ_SCHEMA = CLAIMS_SCHEMA.append(pa.field("dx_version", pa.string())).append(
    pa.field("other_dx_versions", pa.string()))


def claims_query(scope: str = "TRUE") -> str:
    """sql/extract_claims_hhp.sql: one row per claim, for HHP screening and method."""
    return splice(sql_text("extract_claims_hhp.sql"), scope)


def claims_blocks(source, what: str, codes: CodePolicy, counts: dict | None = None):
    """The per-claim extract's blocks (CSV ``source``), their codes checked as
    ``codes`` says (``clean_claim_codes``); ``counts`` adds up what was dropped
    or mapped."""
    offset = 0
    for block in read_blocks(source, CLAIMS_READ_SCHEMA, what, False):
        table, got = clean_claim_codes(pa.Table.from_batches([block]), offset, codes)
        offset += block.num_rows
        for name, n in got.items():
            if counts is not None:
                counts[name] = counts.get(name, 0) + n
        yield table


def clean_claim_codes(table: pa.Table, offset: int, codes: CodePolicy) -> tuple[pa.Table, dict]:
    """A per-claim block with ``dx_code`` and each of ``other_dx_codes`` checked
    like the long extract's codes (``clean_block_codes``), its version columns
    dropped.  A dropped code leaves its claim (an empty ``dx_code`` if it was
    the primary one).  CMS's placeholders stay as they are, counted: the HHP
    method and screening took them as written before code systems existed.
    The block is returned as it came when every code was already written as
    its system holds it."""
    n = table.num_rows
    parts = pc.split_pattern(pc.fill_null(table["other_dx_codes"], ""), ";")
    claim = np.concatenate([np.arange(n), pc.list_parent_indices(parts).to_numpy()])
    raw = pa.concat_arrays([pc.fill_null(table["dx_code"], "").combine_chunks(),
                            pc.list_flatten(parts).combine_chunks()])
    version = pa.concat_arrays([_none_if_empty(table["dx_version"].combine_chunks()),
                                _flags_per_code(table, parts)])
    is_dx = np.arange(len(raw)) < n
    given = pc.not_equal(pc.utf8_trim_whitespace(raw), "").to_numpy(zero_copy_only=False)
    placeholder = pc.is_in(raw, value_set=pa.array(sorted(CMS_PLACEHOLDERS))).to_numpy(
        zero_copy_only=False)
    take = np.flatnonzero(given & ~placeholder)
    new = np.full(len(raw), "", dtype=object)
    kept = np.zeros(len(raw), dtype=bool)
    dropped = mapped = 0
    for dx in (True, False):
        idx = take[is_dx[take] == dx]
        field = "dx_code" if dx else "other_dx_codes"
        clean = clean_block_codes(raw.take(pa.array(idx)), version.take(pa.array(idx)), codes,
                                  table["claim_id"], offset, claim[idx], field,
                                  "dx_version" if dx else "other_dx_versions")
        new[idx[clean.keep]] = clean.codes
        kept[idx[clean.keep]] = True
        dropped, mapped = dropped + clean.dropped, mapped + clean.mapped
    raw_codes = np.asarray(raw.to_numpy(zero_copy_only=False), dtype=object)
    placeholder &= given
    new[placeholder], kept[placeholder] = raw_codes[placeholder], True
    counts = {"placeholder_codes": int(placeholder.sum()), "unknown_codes_dropped": dropped,
              "codes_mapped": mapped}
    table = table.drop_columns(["dx_version", "other_dx_versions"])
    if (kept == given).all() and (new[kept] == raw_codes[kept]).all():
        return table, counts
    return _with_codes(table, claim, new, kept, is_dx), counts


def _none_if_empty(values: pa.Array) -> pa.Array:
    """The per-claim CSV is read with empty strings kept: an empty flag is none."""
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)


def _flags_per_code(table: pa.Table, parts) -> pa.Array:
    """Each other code's version flag (null where its claim has none)."""
    has = pc.fill_null(pc.not_equal(table["other_dx_versions"], ""), False).to_numpy(
        zero_copy_only=False)
    parent = pc.list_parent_indices(parts).to_numpy()
    flags = pc.split_pattern(pc.fill_null(table["other_dx_versions"], ""), ";")
    given = pc.list_flatten(flags).to_numpy(zero_copy_only=False)
    given = given[has[pc.list_parent_indices(flags).to_numpy()]]
    out = np.full(len(parent), None, dtype=object)
    if has[parent].sum() != len(given):
        raise InputError("the claims extract", "the version flags of other_dx_codes do not "
                         "match its codes (a fault of sql/extract_claims_hhp.sql)")
    out[has[parent]] = given
    return pa.array(out, pa.string())


def _with_codes(table: pa.Table, claim: np.ndarray, new: np.ndarray, kept: np.ndarray,
                is_dx: np.ndarray) -> pa.Table:
    n = table.num_rows
    dx = np.where(kept[:n], new[:n], "")
    others = pd.Series(new[~is_dx & kept]).groupby(claim[~is_dx & kept], sort=False).agg(
        ";".join)
    other = np.full(n, "", dtype=object)
    other[others.index.to_numpy()] = others.to_numpy()
    table = table.set_column(table.schema.get_field_index("dx_code"), "dx_code",
                             pa.array(dx, pa.string()))
    return table.set_column(table.schema.get_field_index("other_dx_codes"), "other_dx_codes",
                            pa.array(other, pa.string()))


def extract_claims_table(out: Path, scope: str = "TRUE", codes: CodePolicy | None = None
                         ) -> dict:
    """One row per claim for the HHP method (sql/extract_claims_hhp.sql), by
    COPY, its codes checked as ``codes`` says."""
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
        counts: dict = {}
        table = pa.concat_tables(list(claims_blocks(csv_path, "the claims extract",
                                                    codes or default_codes(), counts)))
        pq.write_table(table, out, compression="zstd")
        return {"claims": table.num_rows, **counts}
    finally:
        csv_path.unlink(missing_ok=True)
