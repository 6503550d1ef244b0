"""Read CMS's CCW RIF claims layout (the layout of today's Medicare data and of
CMS's Synthea-generated RIF sample, ../shared/datasets/rif_synthea/) into
the frames of the RIF tables of sql/source_schema.sql.

The layout (CCW data dictionary; SOURCES.md describes the sample):

- pipe-delimited text with a header row, gzip or plain; beneficiary files may
  start with a UTF-8 BOM;
- dates written ``30-May-2015`` (DD-Mon-YYYY);
- one row per claim *line* (carrier/DME: ``LINE_NUM``; institutional:
  ``CLM_LINE_NUM``), the claim-level fields, diagnoses included, repeated on
  every line: claims are deduplicated on ``CLM_ID``, and a claim whose lines
  disagree on a claim-level field is an error;
- diagnoses ``PRNCPAL_DGNS_CD``, ``ADMTG_DGNS_CD``, ``ICD_DGNS_CD1..25``,
  ``FST_DGNS_E_CD``, ``ICD_DGNS_E_CD1..12`` (claim level) and
  ``LINE_ICD_DGNS_CD`` (line level), each with its ``*_VRSN_CD`` version
  flag (``'0'`` ICD-10-CM, ``'9'`` ICD-9-CM; ``anonymizers.codesystems``).

Every file is checked whole before anything is loaded, and a fault raises
``InputError`` naming the file, the data row and the field, never a value
(no BENE_ID, code or date of the row).  Rows are numbered from 1 over the
data lines, the header not counted: row N is line N + 1 of the (unzipped)
file; lines end in LF or CRLF.  Refused:

- lines ending in a bare CR (old Mac OS; ``anonymizers.io.refuse_bare_cr``),
  named as such rather than read as one header line; a bare CR in a data
  line (mixed line endings, or a CR in a value), with its row;
- bytes that are not UTF-8 (the row, or the header, and the byte offset);
  a gzip file that does not end (a truncated copy);
- a line with more or fewer ``|``-separated fields than the header (a file
  cut short ends in such a line), or a column named twice;
- a missing column the loader reads: the claim fields, a code column
  without its version column or a version column without its code column,
  a gap in ``ICD_DGNS_CD1..`` / ``ICD_DGNS_E_CD1..`` (a whole pair missing
  between present ones), ``LINE_NUM`` beside line diagnoses.  A pair absent
  altogether is not an error: the claim types carry different fields
  (carrier has 12 ``ICD_DGNS_CD``, inpatient 25 and ``ADMTG_DGNS_CD``);
- an unparseable date, an empty identifier, a bad version flag or a code
  that is not a code of the system its flag names.

With ``drop_unknown=True`` unknown codes are dropped instead and counted
per file in diagnoses, the unit of ``source.rif_diagnoses``: a claim-level
code counts once for its claim however many lines repeat it, a line-level
code once for its line.  A header-only claim file is accepted, since a
claim type can legitimately be empty in an extract; the command's summary
lists the rows read per file, so an empty file shows as
``0 rows (header only)`` rather than passing unseen.
File kinds come from the CCW file names (``carrier``, ``inpatient``,
``beneficiary_2015``...); PDE (drug events, no diagnoses) and beneficiary
history files are not read.

``python -m deid.rif_loader DIR [--drop-unknown] [--replace]`` loads a
folder into the warehouse's ``source.rif_*`` tables (sql/source_schema.sql),
all or nothing: every file is read and checked before the warehouse is
started or connected to; the extract queries (sql/extract_claims*.sql) read them
beside the DE-SynPUF tables, so every release runs on either layout.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers import codesystems
from anonymizers.errors import InputError
from anonymizers.io import HEADER_LIMIT, refuse_bare_cr

CLAIM_TYPES = ("carrier", "dme", "hha", "hospice", "inpatient", "outpatient", "snf")
CLAIM_FIELDS = ("BENE_ID", "CLM_ID", "CLM_FROM_DT", "CLM_THRU_DT")
BENE_FIELDS = {"BENE_ID": "bene_id", "BENE_BIRTH_DT": "bene_birth_dt",
               "BENE_SEX_IDENT_CD": "bene_sex_ident_cd", "BENE_RACE_CD": "bene_race_cd",
               "STATE_CODE": "state_code", "BENE_COUNTY_CD": "bene_county_cd"}
DATE_FORMAT = "%d-%b-%Y"
# claim-level diagnosis fields, in claim order: (code column, version column)
CLAIM_DX = ([("PRNCPAL_DGNS_CD", "PRNCPAL_DGNS_VRSN_CD"),
             ("ADMTG_DGNS_CD", "ADMTG_DGNS_VRSN_CD")]
            + [(f"ICD_DGNS_CD{i}", f"ICD_DGNS_VRSN_CD{i}") for i in range(1, 26)]
            + [("FST_DGNS_E_CD", "FST_DGNS_E_VRSN_CD")]
            + [(f"ICD_DGNS_E_CD{i}", f"ICD_DGNS_E_VRSN_CD{i}") for i in range(1, 13)])
LINE_DX = ("LINE_ICD_DGNS_CD", "LINE_ICD_DGNS_VRSN_CD")


@dataclass(frozen=True)
class RifClaims:
    """One claim file read: ``claims`` (one row per claim), ``diagnoses``
    (one row per distinct claim, line, field and code), the number of lines
    read and of diagnoses dropped for an unknown code (counted in the unit of
    ``diagnoses``: a claim-level code once per claim, not once per line)."""

    claims: pd.DataFrame
    diagnoses: pd.DataFrame
    lines: int
    dropped_diagnoses: int


def kind_of(path: Path) -> tuple[str, int | None]:
    """(claim type or ``beneficiary``, year of a beneficiary file or None)."""
    stem = path.name.split(".")[0].lower()
    if stem in CLAIM_TYPES:
        return stem, None
    m = re.fullmatch(r"beneficiary_(\d{4})", stem)
    if m:
        return "beneficiary", int(m.group(1))
    raise InputError(str(path), f"not a CCW RIF file name (expected one of {list(CLAIM_TYPES)} "
                     "or beneficiary_YYYY, .csv or .csv.gz)")


def read_table(path: Path) -> pd.DataFrame:
    """The file's rows as text, header names stripped and upper-cased; refused
    (InputError) unless every line is UTF-8 without NUL bytes, ends in LF or
    CRLF and has the header's number of fields (module docstring).  The whole
    file is checked in memory (its bytes, text and lines beside the frame:
    about 4-5 times its size) so that nothing is read into pandas before it
    passes; a file of several GB needs that much memory (a streaming check is
    left to do)."""
    source = str(path)
    raw = _file_bytes(path)
    refuse_bare_cr(source, raw[:HEADER_LIMIT + 1])  # else the whole file is the header
    text = _decoded(raw, source)
    del raw  # not kept beside the text (the memory said above)
    text = text.replace("\r\n", "\n")
    header_end = text.find("\n")
    cr = text.find("\r", header_end + 1) if header_end >= 0 else -1
    if cr >= 0:  # a data line of a file whose line endings are mixed, or a CR in a value
        raise InputError(source, "a bare CR (\\r) in the line: lines must end in LF or CRLF",
                         row=text.count("\n", 0, cr))
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()  # the last line's terminator, and blank lines after it
    if not lines or not lines[0].strip():
        raise InputError(source, "file is empty (no header)")
    nul = text.find("\x00")
    if nul >= 0:  # valid UTF-8 that no text column holds (PostgreSQL's COPY refuses it)
        line = text.count("\n", 0, nul)
        raise InputError(source, ("header holds" if line == 0 else "holds") + " a NUL byte",
                         row=line or None)
    header = [c.strip().upper() for c in lines[0].split("|")]
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise InputError(source, "column named twice in the header", field=twice[0])
    counts = np.fromiter((line.count("|") + 1 for line in lines[1:]), dtype=np.int64,
                         count=len(lines) - 1)
    ragged = np.flatnonzero(counts != len(header))
    if ragged.size:
        row = int(ragged[0]) + 1
        raise InputError(source, f"{counts[row - 1]} fields where the header has "
                         f"{len(header)}", row=row)
    if len(lines) == 1:
        return pd.DataFrame(columns=header, dtype=str)
    df = pd.read_csv(io.StringIO("\n".join(lines)), sep="|", dtype=str, keep_default_na=False,
                     quoting=csv.QUOTE_NONE, skip_blank_lines=False, header=0,
                     names=header, engine="c", lineterminator="\n")
    return df


GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"


def _file_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is a gzip file (by its first bytes)."""
    raw = path.read_bytes()
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(str(path), f"not a complete gzip file ({type(exc).__name__})") from None


def _decoded(raw: bytes, source: str) -> str:
    """UTF-8 text, a leading BOM dropped; a byte that is not UTF-8 is named by
    its line (the data row, or the header) and its offset in the (unzipped) file."""
    skip = len(BOM) if raw.startswith(BOM) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        line = raw.count(b"\n", 0, offset)
        problem = f"not UTF-8 text (byte offset {offset} of the file"
        problem += ", unzipped)" if source.endswith(".gz") else ")"
        if line == 0:
            raise InputError(source, "header is " + problem) from None
        raise InputError(source, problem, row=line) from None


def _column(df: pd.DataFrame, col: str, source: str) -> pd.Series:
    if col not in df.columns:
        raise InputError(source, f"missing column; found {len(df.columns)} columns", field=col)
    return df[col].str.strip()


def _first_bad(source: str, col: str, bad: np.ndarray, problem: str) -> None:
    if bad.any():
        raise InputError(source, problem, row=int(bad.argmax()) + 1, field=col)


def _ids(df: pd.DataFrame, cols, source: str) -> None:
    for col in cols:
        _first_bad(source, col, _column(df, col, source).eq("").to_numpy(), "empty identifier")


def _dates(values: pd.Series, col: str, source: str, required: bool = False) -> pd.Series:
    empty = values.eq("").to_numpy()
    parsed = pd.to_datetime(values, format=DATE_FORMAT, errors="coerce")
    _first_bad(source, col, (~empty | required) & parsed.isna().to_numpy(),
               "unparseable date (expected DD-Mon-YYYY, e.g. 30-May-2015)")
    return parsed.dt.strftime("%Y-%m-%d").where(~empty, None)


def read_beneficiaries(path: Path) -> pd.DataFrame:
    """A ``beneficiary_YYYY`` file as rows of ``source.rif_beneficiary``."""
    source = str(path)
    kind, year = kind_of(path)
    if kind != "beneficiary":
        raise InputError(source, "not a beneficiary file")
    df = read_table(path)
    _ids(df, ["BENE_ID"], source)
    out = pd.DataFrame({name: _column(df, col, source) for col, name in BENE_FIELDS.items()})
    out["bene_birth_dt"] = _dates(out["bene_birth_dt"], "BENE_BIRTH_DT", source, required=True)
    out = out.replace("", None)
    out.insert(0, "year", year)
    return out.reset_index(drop=True)


def read_claims(path: Path, drop_unknown: bool = False) -> RifClaims:
    """A claim file as claims and diagnoses (module docstring)."""
    source = str(path)
    kind, _ = kind_of(path)
    if kind not in CLAIM_TYPES:
        raise InputError(source, "not a claim file")
    df = read_table(path)
    present = _dx_columns(df.columns, source)
    _ids(df, ["BENE_ID", "CLM_ID"], source)
    claims = pd.DataFrame({c.lower(): _column(df, c, source) for c in CLAIM_FIELDS})
    claims["clm_from_dt"] = _dates(claims["clm_from_dt"], "CLM_FROM_DT", source)
    claims["clm_thru_dt"] = _dates(claims["clm_thru_dt"], "CLM_THRU_DT", source)
    _same_on_every_line(df, [*CLAIM_FIELDS, *(x for pair in present for x in pair)], source)
    dx, dropped = _diagnoses(df, present, source, drop_unknown)
    first = ~claims["clm_id"].duplicated().to_numpy()
    claims = claims[first].assign(claim_type=kind).reset_index(drop=True)
    return RifClaims(claims, dx, len(df), dropped)


def _dx_columns(columns, source: str) -> list[tuple[str, str]]:
    """The claim-level (code, version) column pairs of a claim file's header,
    checked before any row: the claim fields are there, each code column has
    its version column and each version column its code column, a numbered
    series (``ICD_DGNS_CD1..``, ``ICD_DGNS_E_CD1..``) has no gap, and line
    diagnoses come with ``LINE_NUM``: a column missing would lose its codes."""
    have = set(columns)
    missing = [c for c in CLAIM_FIELDS if c not in have]
    for code, flag in [*CLAIM_DX, LINE_DX]:
        if (code in have) != (flag in have):
            missing.append(flag if code in have else code)
    for series in ("ICD_DGNS_CD", "ICD_DGNS_E_CD"):
        numbers = [int(c[len(series):]) for c in have
                   if c.startswith(series) and c[len(series):].isdigit()]
        missing += [f"{series}{i}" for i in range(1, max(numbers, default=0))
                    if i not in numbers]
    if LINE_DX[0] in have and "LINE_NUM" not in have:
        missing.append("LINE_NUM")
    if missing:
        raise InputError(source, f"missing column {missing[0]}"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                         field=missing[0])
    known = {c for pair in [*CLAIM_DX, LINE_DX] for c in pair}
    unread = sorted(c for c in have - known if "DGNS" in c)
    if unread:  # a diagnosis field this loader does not know would be lost unseen
        raise InputError(source, "diagnosis column this loader does not read (the CCW "
                         "layout has ICD_DGNS_CD1..25, ICD_DGNS_E_CD1..12)", field=unread[0])
    return [(c, v) for c, v in CLAIM_DX if c in have]


def _same_on_every_line(df: pd.DataFrame, cols, source: str) -> None:
    """Claim-level fields must repeat unchanged on each line of a claim; the
    first line that differs from its claim's first line is named."""
    claim = df.groupby("CLM_ID", sort=False)
    for col in cols:
        varies = (df[col] != claim[col].transform("first")).to_numpy()
        _first_bad(source, col, varies, "a claim-level field differs from the claim's "
                   "first line")


def _diagnoses(df: pd.DataFrame, present, source: str, drop: bool):
    """Long diagnoses: claim-level fields once per claim, line-level per line."""
    parts = [_dx_part(df, code, flag, None) for code, flag in present]
    if LINE_DX[0] in df.columns:
        _ids(df, ["LINE_NUM"], source)
        parts.append(_dx_part(df, *LINE_DX, df["LINE_NUM"]))
    kept, dropped = [], 0
    for part in parts:
        # one diagnosis per claim, line, field and code: a claim-level code
        # repeated on every line of its claim is checked (and counted) once
        part = part[part["code"] != ""].drop_duplicates(["clm_id", "line_num", "code", "flag"])
        if part.empty:
            continue
        field, flag = part["field"].iat[0], part["flag_field"].iat[0]
        systems = _at_file_row(source, part["row"], codesystems.system_of_flags,
                               part["flag"], source, field=flag)
        checked = _at_file_row(source, part["row"], codesystems.validate,
                               part["code"], systems, source, field, drop)
        dropped += checked.dropped
        kept.append(part[checked.keep].assign(code=checked.codes,
                                              code_system=systems[checked.keep]))
    cols = ["bene_id", "clm_id", "line_num", "field", "code", "code_system"]
    if not kept:
        return pd.DataFrame(columns=cols), dropped
    long = pd.concat(kept).drop_duplicates(["clm_id", "line_num", "field", "code"])
    return long[cols].reset_index(drop=True), dropped


def _at_file_row(source: str, rows: pd.Series, check, *args, **kwargs):
    """``check(*args, **kwargs)``; an InputError naming a row of ``rows`` is
    re-raised naming that row of the file."""
    try:
        return check(*args, **kwargs)
    except InputError as exc:
        if exc.row is None:
            raise
        raise InputError(source, exc.problem, row=int(rows.iloc[exc.row - 1]) + 1,
                         field=exc.field) from None


def _dx_part(df, code_col, flag_col, line) -> pd.DataFrame:
    n = len(df)
    return pd.DataFrame({"row": np.arange(n),
                         "bene_id": df["BENE_ID"].str.strip().to_numpy(),
                         "clm_id": df["CLM_ID"].str.strip().to_numpy(),
                         "line_num": line.str.strip().to_numpy() if line is not None
                         else np.full(n, None),
                         "field": code_col, "flag_field": flag_col,
                         "code": df[code_col].str.strip().to_numpy(),
                         "flag": df[flag_col].to_numpy()})


def read_files(paths, drop_unknown: bool = False) -> dict:
    """Every file read and checked: frames per table of sql/source_schema.sql (source.rif_*)
    (``rif_beneficiary``, ``rif_claims``, ``rif_diagnoses``), ``rows``, the
    data rows (lines) read per file name (0: a header-only file, accepted), and
    ``dropped_diagnoses``, the diagnoses dropped for an unknown code per claim
    file name (``RifClaims``)."""
    benes, claims, dx, rows, dropped = [], [], [], {}, {}
    for path in map(Path, paths):
        kind, _ = kind_of(path)
        if kind == "beneficiary":
            benes.append(read_beneficiaries(path))
            rows[path.name] = len(benes[-1])
            continue
        got = read_claims(path, drop_unknown)
        claims.append(got.claims)
        dx.append(got.diagnoses.assign(claim_type=kind))
        rows[path.name] = got.lines
        dropped[path.name] = got.dropped_diagnoses
    return {"rif_beneficiary": _concat(benes, ["year", *BENE_FIELDS.values()]),
            "rif_claims": _concat(claims, ["claim_type", "bene_id", "clm_id", "clm_from_dt",
                                           "clm_thru_dt"]),
            "rif_diagnoses": _concat(dx, ["claim_type", "bene_id", "clm_id", "line_num",
                                          "field", "code", "code_system"]),
            "rows": rows, "dropped_diagnoses": dropped}


def _concat(frames, cols) -> pd.DataFrame:
    return pd.concat(frames)[cols].reset_index(drop=True) if frames else pd.DataFrame(
        columns=cols)


TABLES = ("rif_beneficiary", "rif_claims", "rif_diagnoses")


def load_files(paths, drop_unknown: bool = False, replace: bool = False) -> dict[str, int]:
    """Read and check every file first (``read_files``), then load them
    (``load_frames``)."""
    return load_frames(read_files(paths, drop_unknown), replace)


def load_frames(frames: dict, replace: bool = False) -> dict[str, int]:
    """Load ``read_files``' frames in one transaction into the RIF tables of
    sql/source_schema.sql (which must exist); rows per table and
    ``unknown_diagnoses_dropped``.  With ``replace`` the RIF tables are
    emptied first, in the same transaction."""
    from deid.pgcopy import copy_frame
    from deid.warehouse import connect

    counts = {}
    with connect() as conn, conn.cursor() as cur:
        if replace:
            cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
        for table in TABLES:
            copy_frame(cur, f"source.{table}", frames[table])
            counts[table] = len(frames[table])
    return {**counts, "unknown_diagnoses_dropped": sum(frames["dropped_diagnoses"].values())}


def rif_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(files the loader reads, files it leaves) of a CCW RIF folder: claim
    files and ``beneficiary_YYYY`` files are read; PDE, beneficiary history
    and anything else are left."""
    read, left = [], []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        try:
            kind_of(path)
        except InputError:
            left.append(path)
        else:
            read.append(path)
    return read, left


def main(argv: list[str] | None = None) -> int:
    """``python -m deid.rif_loader DIR``: load a CCW RIF folder into the
    warehouse's source schema (source.rif_*), all or none; the extract reads
    it beside DE-SynPUF.  A malformed file: one line naming the file, row and
    field on stderr, exit status 2, nothing loaded and the warehouse not
    started (the files are checked first)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m deid.rif_loader",
        description="Load a folder of CCW RIF files (carrier, dme, hha, hospice, inpatient, "
                    "outpatient, snf, beneficiary_YYYY; .csv or .csv.gz, pipe-delimited) into "
                    "the warehouse's source schema, in one transaction.")
    parser.add_argument("folder", type=Path, metavar="DIR")
    parser.add_argument("--drop-unknown", action="store_true",
                        help="count and drop codes that are not codes of the system their "
                             "version flag names, instead of refusing the file")
    parser.add_argument("--replace", action="store_true",
                        help="empty the RIF source tables first")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder}: no such folder")
    files, left = rif_files(args.folder)
    if not any(kind_of(p)[0] != "beneficiary" for p in files):
        parser.error(f"{args.folder}: no CCW RIF claim file (carrier.csv.gz, ...)")
    from deid.console import fail, logs_to_stderr

    try:  # every file checked before the warehouse is started or touched
        frames = read_files(files, args.drop_unknown)
    except InputError as exc:
        return fail(exc, 2)
    from deid import warehouse

    try:
        with logs_to_stderr():
            if warehouse.is_embedded():
                warehouse.ensure_schemas()
            counts = load_frames(frames, args.replace)
    except InputError as exc:
        return fail(exc, 2)
    except warehouse.WarehouseError as exc:  # not reachable, or no Airflow metadata DB
        return fail(exc, 1)
    for name, n in frames["rows"].items():
        print(f"{name}: {n} rows" + (" (header only)" if n == 0 else ""))
    for name in TABLES:
        print(f"source.{name}: {counts[name]} rows")
    print(f"diagnoses dropped for an unknown code: {counts['unknown_diagnoses_dropped']}")
    if left:
        print("not read: " + ", ".join(p.name for p in left))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
