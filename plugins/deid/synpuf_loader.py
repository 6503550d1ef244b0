"""Load DE-SynPUF CSV files, as CMS publishes them, into the source schema.

Files may be gzip or plain, with a quoted (CMS originals) or unquoted header,
their lines ending in LF, CRLF or a bare CR (old Mac OS: pandas' reader
takes each as a line end, so such a file is read right, not refused as the
RIF loader and the commands refuse it, whose readers split lines on LF);
the kind of file and the year of a beneficiary summary come from the CMS file
name (``DE1_0_2008_Beneficiary_Summary_File_Sample_1.csv``...).  Every value
the pipeline uses is checked before anything is written: a missing column, an
unparseable date, a diagnosis code that is not of the files' code system or
an empty patient id raises ``InputError`` naming the file, the data row and
the field, and the transaction that holds every file's rows is rolled back.

The code system is ICD-9-CM by default, checked by the form of its codes
(``ICD9_DX``: DE-SynPUF writes codes CMS's final list lacks); with
``code_system="icd10cm"`` (``--code-system icd10cm``) the DE-SynPUF columns
hold ICD-10-CM codes, as the generator writes them, checked against the
ICD-10-CM tabular list (``anonymizers.codesystems``).  The release file's
``code_system`` must then say icd10cm too (``deid.extract``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.codesystems import CMS_PLACEHOLDERS, ICD9_DX
from anonymizers.errors import InputError
from deid.pgcopy import copy_frame
from deid.warehouse import connect

CHUNK_ROWS = 200_000
# ICD9_DX, CMS_PLACEHOLDERS (declared in anonymizers.codesystems): the placeholders
# are loaded as published and dropped at extract (see deid.extract).
KINDS = {"Beneficiary_Summary": "beneficiary_summary", "Inpatient_Claims": "inpatient_claims",
         "Outpatient_Claims": "outpatient_claims", "Carrier_Claims": "carrier_claims"}


def table_columns(conn, table: str) -> list[tuple[str, str]]:
    """(column, type) of ``source.<table>`` in table order."""
    with conn.cursor() as cur:
        cur.execute("SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'source' AND table_name = %s ORDER BY ordinal_position",
                    (table,))
        return cur.fetchall()


def kind_of(path: Path) -> tuple[str, int | None]:
    """(source table, year or None) from a CMS file name."""
    for marker, table in KINDS.items():
        if marker in path.name:
            year = None
            if table == "beneficiary_summary":
                m = re.search(r"DE1_0_(\d{4})_", path.name)
                if not m:
                    raise InputError(str(path), "cannot tell the year from the file name")
                year = int(m.group(1))
            return table, year
    raise InputError(str(path), f"not a DE-SynPUF file name (expected one of {list(KINDS)})")


def load_files(paths: list[str | Path], code_system: str = "icd9cm") -> dict[str, int]:
    """Load every file in one transaction; returns rows loaded per file name."""
    counts = {}
    with connect() as conn:
        for p in map(Path, paths):
            table, year = kind_of(p)
            columns = table_columns(conn, table)
            n = 0
            for offset, chunk in _chunks(p):
                frame = prepare_frame(chunk, columns, str(p), offset, year, code_system)
                with conn.cursor() as cur:
                    copy_frame(cur, f"source.{table}", frame)
                n += len(frame)
            counts[p.name] = n
    return counts


def _chunks(path: Path):
    reader = pd.read_csv(path, dtype=str, keep_default_na=False, chunksize=CHUNK_ROWS,
                         compression="infer")
    offset = 0
    try:
        for chunk in reader:
            yield offset, chunk
            offset += len(chunk)
    except pd.errors.EmptyDataError:
        raise InputError(str(path), "file is empty (no header)") from None


def prepare_frame(df: pd.DataFrame, columns: list[tuple[str, str]], source: str,
                  offset: int = 0, year: int | None = None,
                  code_system: str = "icd9cm") -> pd.DataFrame:
    """Check and convert a CMS-layout frame to the table's columns.

    ``offset`` is the number of data rows before this chunk (for row numbers).
    """
    df = df.rename(columns=lambda c: c.strip().strip('"').upper())
    out = {}
    for name, dtype in columns:
        if name == "year":
            out[name] = np.full(len(df), year)
            continue
        col = name.upper()
        if col not in df.columns:
            raise InputError(source, f"missing column; found {len(df.columns)} columns",
                             field=col)
        values = df[col].fillna("").str.strip()
        out[name] = _convert(values, dtype, col, source, offset, code_system)
    _check_ids(df, source, offset)
    return pd.DataFrame(out)


def _convert(values: pd.Series, dtype: str, col: str, source: str, offset: int,
             code_system: str = "icd9cm"):
    empty = values.eq("").to_numpy()
    if dtype == "date":
        parsed = pd.to_datetime(values, format="%Y%m%d", errors="coerce")
        _raise_first(source, offset, col, (~empty) & parsed.isna().to_numpy(),
                     values, "unparseable date (expected YYYYMMDD)")
        return parsed.dt.strftime("%Y-%m-%d").where(~empty, None)
    if dtype in ("smallint", "integer", "numeric"):
        num = pd.to_numeric(values.where(~empty, None), errors="coerce")
        _raise_first(source, offset, col, (~empty) & num.isna().to_numpy(), values,
                     "not a number")
        return values.where(~empty, None)
    if "ICD9_DGNS" in col and code_system == "icd10cm":
        from anonymizers.codesystems import is_valid

        ok = is_valid(values.to_numpy(dtype=object), code_system) | values.isin(
            CMS_PLACEHOLDERS).to_numpy()
        bad = (~empty) & ~ok
        if bad.any():  # the value is not named: a diagnosis is patient data
            raise InputError(source, "not an ICD-10-CM diagnosis code",
                             row=offset + int(bad.argmax()) + 1, field=col)
    elif "ICD9_DGNS" in col:
        ok = values.str.match(ICD9_DX) | values.isin(CMS_PLACEHOLDERS)
        _raise_first(source, offset, col, (~empty) & ~ok.to_numpy(), values,
                     "not an ICD-9-CM diagnosis code")
    return values.where(~empty, None)


def _check_ids(df: pd.DataFrame, source: str, offset: int) -> None:
    for col in ("DESYNPUF_ID", "CLM_ID"):
        if col in df.columns:
            bad = df[col].fillna("").str.strip().eq("").to_numpy()
            _raise_first(source, offset, col, bad, df[col], "empty identifier")


def _raise_first(source, offset, col, bad: np.ndarray, values, problem: str) -> None:
    """Refuse the first ``bad`` row, naming file, row and field but not the value:
    a date, an amount or a code of a claim is patient data."""
    if bad.any():
        i = int(bad.argmax())
        raise InputError(source, problem, row=offset + i + 1, field=col)


def main(argv: list[str] | None = None) -> int:
    """``python -m deid.synpuf_loader FILE...``: load the files into the
    warehouse's source schema, all or none, and print the rows of each.  The
    embedded warehouse is set up first; a configured one must have been set up
    by its owner (``python -m deid.admin_setup``).  A malformed file: one line
    naming the file, row and field on stderr, exit status 2, nothing loaded."""
    parser = argparse.ArgumentParser(
        prog="python -m deid.synpuf_loader",
        description="Load DE-SynPUF CSV files (gzip or plain, as CMS publishes them) "
                    "into the warehouse's source schema, in one transaction.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="a CMS file, e.g. DE1_0_2008_Beneficiary_Summary_File_Sample_1.csv.gz")
    parser.add_argument("--code-system", choices=["icd9cm", "icd10cm"], default="icd9cm",
                        help="code system of the diagnosis columns (default icd9cm)")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            parser.error(f"{path}: no such file")
    from deid import warehouse
    from deid.console import fail, logs_to_stderr

    try:
        with logs_to_stderr():
            for path in args.files:  # a file of another kind stops it before the warehouse
                kind_of(path)
            if warehouse.is_embedded():
                warehouse.ensure_schemas()
            counts = load_files(args.files, args.code_system)
    except InputError as exc:
        return fail(exc, 2)
    except warehouse.WarehouseError as exc:  # not reachable, or no Airflow metadata DB
        return fail(exc, 1)
    for name, rows in counts.items():
        print(f"{name}: {rows} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
