"""CSV and JSON I/O at the edges of the library, with errors that name the spot."""

from __future__ import annotations

import csv
import gzip
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.errors import InputError

# A header names a few columns; a first line longer than this is not one (a
# file without a header, or not a CSV file), and parsing it would take minutes.
HEADER_LIMIT = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
BARE_CR = "line endings are bare CR (\\r); convert to LF or CRLF"


def read_table(path: str | Path, required: list[str],
               optional: list[str] = ()) -> pd.DataFrame:
    """Read a CSV (plain or gzip, UTF-8) as strings, checking its shape.

    The first line is the header.  Raises InputError naming the file, the
    1-based data row (blank lines are not counted) and the field for: a file
    that is missing or unreadable, not UTF-8, whose lines end in a bare CR
    (``refuse_bare_cr``), without a header naming every
    ``required`` column, with a row whose number of fields differs from the
    header's (never shifted into an index), with no data row, or with an
    empty value in a required column.  No message quotes a value of the file:
    it may be a patient identifier.  Empty values of ``optional`` columns
    are NaN.
    """
    source = str(path)
    with _open_binary(Path(path)) as f:
        header = _read_header(f, source, required, list(optional))
        try:
            df = pd.read_csv(f, header=None, dtype=str, keep_default_na=False,
                             na_values=[""], engine="pyarrow")
        except pd.errors.EmptyDataError:
            df = pd.DataFrame(columns=range(len(header)))
        except (pd.errors.ParserError, UnicodeDecodeError, OSError, EOFError, zlib.error):
            raise _locate_csv_error(Path(path), source, header) from None
    if df.shape[1] != len(header):
        raise InputError(source, f"{df.shape[1]} fields where the header has {len(header)}",
                         row=1)
    if len(df) == 0:
        raise InputError(source, "no data rows after the header: an input without "
                         "records cannot be released")
    df.columns = header
    keep = list(required) + [c for c in optional if c in header]
    df = df[keep]
    check_no_nulls(df, source, required)
    return df


def _open_binary(path: Path):
    """The file as a binary stream, decompressed if it is gzip."""
    try:
        return gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or type(exc).__name__}") \
            from None


def _read_header(f, source: str, required: list[str], optional: list[str]) -> list[str]:
    """The header's column names; InputError unless it names each of ``required``
    once (and each of the ``optional`` ones it names, once)."""
    expected = ",".join(required)
    try:
        line = f.readline(HEADER_LIMIT + 1)
    except (OSError, EOFError, zlib.error):
        raise InputError(source, "cannot be read (a damaged gzip file?)") from None
    if not line:
        raise InputError(source, f"file is empty: expected a header {expected}")
    refuse_bare_cr(source, line)
    if len(line) > HEADER_LIMIT and not line.endswith(b"\n"):
        raise InputError(source, f"the first line is longer than {HEADER_LIMIT} bytes, "
                         f"so it is not a header: expected a header {expected}")
    try:
        text = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(source, "the header (first line) is not UTF-8 text") from None
    names = [c.strip() for c in next(csv.reader([text]), [])]
    for col in required:
        if col not in names:
            raise InputError(source, f"missing column {col!r}: the header (first line) "
                             f"must name the columns {expected} (is it missing?)", field=col)
    twice = next((c for c in required + optional if names.count(c) > 1), None)
    if twice is not None:
        raise InputError(source, "the header names this column twice", field=twice)
    return names


def refuse_bare_cr(source: str, head: bytes) -> None:
    """InputError ``BARE_CR`` naming only the file when its lines end in a bare
    CR (old Mac OS files).  ``head`` is the file's first bytes (unzipped): its
    first line with its end, or at least ``HEADER_LIMIT + 1`` bytes of it.

    Such a file has no LF, so a reader splitting lines on LF takes it whole
    for the header and refused it for a misleading reason (a missing column,
    a column named twice, a first line too long), failed with a traceback,
    or named a value of a data row as a column.  A CR is bare when more of
    the first line follows it: the CR of a CRLF end is not, nor a lone CR
    ending a header-only file.  Such a file is refused, not read: the line
    logic here and in the RIF loader (the header's readline, row numbers
    counted in LFs for errors) knows LF and CRLF only, and one line telling
    the operator to convert it costs less than teaching each path CR.  (The
    DE-SynPUF loader, which pandas reads whole, reads such a file right.)"""
    end = head.find(b"\n")
    line = head if end < 0 else head[:end]
    if b"\r" in line.rstrip(b"\r"):
        raise InputError(source, BARE_CR)


def _locate_csv_error(path: Path, source: str, header: list[str]) -> InputError:
    """The first row the fast reader refused, found again with the csv module.

    Runs only after a failure, so its pace does not matter; it reads what the
    fast reader read (blank lines are not counted as rows).
    """
    opener = gzip.open if _is_gzip(path) else open
    row = 0
    try:
        with opener(path, "rt", encoding="utf-8", errors="surrogateescape",
                    newline="") as text:
            text.readline()
            for row, fields in enumerate(filter(None, csv.reader(text)), start=1):
                if len(fields) != len(header):
                    return InputError(source, f"{len(fields)} fields where the header has "
                                      f"{len(header)}", row=row)
                for name, value in zip(header, fields):
                    if _SURROGATE.search(value):
                        return InputError(source, "not UTF-8 text", row=row, field=name)
    except csv.Error as exc:
        return InputError(source, f"not valid CSV ({exc})", row=row + 1)
    except (OSError, EOFError, zlib.error):
        return InputError(source, f"cannot be read after row {row} (a damaged gzip file?)")
    return InputError(source, "cannot be parsed as CSV (a quoted value that does not end?)")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


# surrogateescape decodes each byte that is not UTF-8 as one of these
_SURROGATE = re.compile("[\udc80-\udcff]")


def require_columns(df, source: str, columns) -> None:
    """InputError unless ``df`` is a DataFrame holding every one of ``columns``."""
    if not isinstance(df, pd.DataFrame):
        raise InputError(source, f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(source, f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])


def check_no_nulls(df: pd.DataFrame, source: str, columns: list[str],
                   first_row: int = 1) -> None:
    """Raise InputError at the first empty value of ``columns``; ``df``'s first
    row is row ``first_row`` of ``source`` (a later batch of it)."""
    for col in columns:
        bad = df[col].isna().to_numpy()
        if bad.any():
            row = int(bad.argmax()) + first_row
            raise InputError(source, "empty value", row=row, field=col)


def read_json(path: str | Path) -> object:
    """A UTF-8 JSON file; InputError naming the file and line when it is not one."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or type(exc).__name__}") \
            from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "not UTF-8 text",
                         row=data.count(b"\n", 0, exc.start) + 1) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON: {exc.msg}", row=exc.lineno) from None


def write_json(obj: object, path: str | Path) -> None:
    Path(path).write_text(json.dumps(obj, indent=1, sort_keys=False, default=_jsonable))


def _jsonable(x):
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# --- code systems of a claims table (issue 27) --------------------------------
# A table may give each row's code system as CCW's version flag ('9' ICD-9-CM,
# '0' ICD-10-CM), the long-format form of the RIF's *_VRSN_CD columns.
CODE_VERSION = "code_version"
MIXED = {"refuse": "refuse", "map-to-icd10": "map"}  # CLI flag -> codesystems.unify
GEM_COLUMNS = ["icd9cm", "icd10cm", "no_map", "combination", "scenario", "choice_list",
               "approximate"]
# why a row of another code system is refused on the command line (the DAG's
# extract says it of its release file: codesystems.RELEASE_FILE_REFUSAL)
CLI_REFUSAL = ("--mixed refuse (the default) refuses mixed code systems; "
               "--mixed map-to-icd10 maps ICD-9-CM rows through --gem")


def add_code_system_arguments(parser) -> None:
    """The options every command reading diagnosis codes shares."""
    parser.add_argument("--code-system", choices=["icd9cm", "icd10cm"], default="icd9cm",
                        help="code system of the data's codes (default icd9cm)")
    parser.add_argument("--drop-unknown", action="store_true",
                        help="drop (and count) rows whose code is not a code of the code "
                             "system, instead of refusing the input")
    parser.add_argument("--mixed", choices=list(MIXED), default="refuse",
                        help=f"rows whose {CODE_VERSION} column names another code system: "
                             "refuse the input (default) or map ICD-9-CM into ICD-10-CM "
                             "through the GEM (needs --code-system icd10cm and --gem)")
    parser.add_argument("--gem", default=None, metavar="CSV",
                        help="CMS's ICD-9 -> ICD-10-CM GEM (columns "
                             f"{','.join(GEM_COLUMNS)}), for --mixed map-to-icd10 (and, in ugaclip and "
                             "disassociate, to carry ICD-9-CM utility policies)")


@dataclass(frozen=True)
class CleanCodes:
    """A table with its codes normalised and checked, and what that took."""

    table: pd.DataFrame
    dropped: int
    mapped: int

    def metrics(self, code_system: str) -> dict:
        return {"code_system": code_system, "rows_dropped_unknown_code": self.dropped,
                "rows_mapped_to_code_system": self.mapped}

    def summary(self) -> str:
        """The counts for a command's summary line, naming no code:
        ``"1 row dropped (--drop-unknown), 0 mapped (--mixed map-to-icd10)"``."""
        rows = "row" if self.dropped == 1 else "rows"
        return f"{self.dropped} {rows} dropped (--drop-unknown), " \
               f"{self.mapped} mapped (--mixed map-to-icd10)"


def clean_codes(df: pd.DataFrame, source: str, code_system: str, drop_unknown: bool = False,
                mixed: str = "refuse", gem: str | None = None,
                keep_spelling: bool = False, refusal: str = CLI_REFUSAL) -> CleanCodes:
    """``df`` (as ``read_table`` gives it) with ``code`` normalised and
    validated against ``code_system`` (``anonymizers.codesystems``): an
    unknown code is an InputError naming its row and field, or its row is
    dropped and counted with ``drop_unknown``.  With a ``code_version``
    column, rows of another system are refused or mapped into ICD-10-CM, as
    ``mixed`` says (``refuse`` / ``map-to-icd10``); the column is removed.
    A refusal of another system's row ends with ``refusal``, what refuses
    it: the command line's ``--mixed`` by default, the release file's
    ``mixed`` for the DAG's extract (``codesystems.RELEASE_FILE_REFUSAL``).
    A row whose code is not a code of the system its flag names is an
    unknown code (``codesystems.unify``).

    ``keep_spelling`` (for methods that treat codes as opaque strings, whose
    output other commands match against their own inputs and policies, e.g.
    PPE's policy against UGACLIP's records): a valid code keeps the input's
    spelling (``493.00``), stripped of surrounding spaces, and a mapped code
    takes the spelling the table gives its target, if any.  One code spelled
    two ways (``401.1``, ``4011``) would be two codes to such a method, so it
    is an InputError naming the row of the second spelling."""
    from anonymizers import codesystems as cs
    from anonymizers.errors import ParameterError
    if mixed not in MIXED:
        raise ParameterError("mixed", f"must be one of {list(MIXED)}, got {mixed!r}")
    df = df.reset_index(drop=True)
    if CODE_VERSION not in df.columns:
        checked = cs.validate(df["code"].to_numpy(dtype=object), code_system, source, "code",
                              drop_unknown)
        foreign = np.zeros(len(df), dtype=bool)
    else:
        systems = cs.system_of_flags(df[CODE_VERSION], source, CODE_VERSION)
        foreign = systems != code_system
        mapping = None
        if MIXED[mixed] == "map" and foreign.any():
            mapping = _gem_mapping(gem, code_system, df["code"][systems == cs.ICD9CM])
        checked = cs.unify(df["code"].to_numpy(dtype=object), systems, code_system,
                           MIXED[mixed], mapping, source, "code", drop_unknown, refusal)
    table = df[checked.keep].drop(columns=[CODE_VERSION], errors="ignore")
    codes = checked.codes
    if keep_spelling:
        codes = _spelled(df["code"].to_numpy(dtype=object), checked, foreign, source)
    table = table.assign(code=codes).reset_index(drop=True)
    return CleanCodes(table, checked.dropped, int(foreign[checked.keep].sum()))


def read_codes(path, required: list[str], args, optional=(),
               keep_spelling: bool = True) -> CleanCodes:
    """``read_table(path, required, optional + code_version)`` cleaned by
    ``clean_codes`` with the command's ``add_code_system_arguments`` options."""
    return clean_codes(read_table(path, required, [*optional, CODE_VERSION]), str(path),
                       args.code_system, args.drop_unknown, args.mixed, args.gem,
                       keep_spelling=keep_spelling)


def _spelled(raw: np.ndarray, checked, foreign: np.ndarray, source: str) -> np.ndarray:
    """The kept rows' codes as the input spells them (see ``clean_codes``)."""
    rows = np.flatnonzero(checked.keep)
    own = ~foreign[rows]
    spelled = pd.Series(raw[rows], dtype=object).astype(str).str.strip().to_numpy(dtype=object)
    pairs = pd.DataFrame({"code": checked.codes[own], "spelling": spelled[own]})
    firsts = pairs.drop_duplicates()
    twice = firsts["code"].duplicated()
    if twice.any():
        row = int(rows[np.flatnonzero(own)[firsts.index[twice.to_numpy()][0]]]) + 1
        raise InputError(source, "this code is spelled another way in an earlier row (dots, "
                                 "spaces or case); write each code one way", row=row,
                         field="code")
    spelling = dict(zip(firsts["code"], firsts["spelling"]))
    out = spelled.copy()
    out[~own] = [spelling.get(c, c) for c in checked.codes[~own]]
    return out


def _gem_mapping(gem: str | None, code_system: str, icd9_codes):
    from anonymizers import codesystems as cs
    from anonymizers.errors import ParameterError
    if code_system != cs.ICD10CM:
        raise ParameterError("mixed", "map-to-icd10 maps ICD-9-CM rows into ICD-10-CM: "
                                      "it needs --code-system icd10cm")
    if gem is None:
        raise ParameterError("gem", "--mixed map-to-icd10 needs --gem (CMS's ICD-9 -> "
                                    "ICD-10-CM General Equivalence Mapping)")
    return cs.gem_forward(read_gem(gem),
                          sources=cs.normalize(icd9_codes.to_numpy(dtype=object)))


def read_gem(path: str | Path) -> pd.DataFrame:
    """CMS's forward GEM (ICD-9-CM -> ICD-10-CM) with ``GEM_COLUMNS``, for
    ``codesystems.gem_forward``.

    A backward GEM (ICD-10-CM -> ICD-9-CM, CMS's ``2018_I10gem``, as
    anonymizers/data/hhp/gem/icd10cmtoicd9gem.csv.gz holds it) has the same
    columns, so reading them by name would silently map through the wrong
    file.  It is refused (InputError naming the file, no code quoted) when
    its header puts ``icd10cm`` before ``icd9cm`` (the source code comes
    first in CMS's files and in the project's tables), or when most of its
    ``icd9cm`` column's codes are ICD-10-CM codes and not ICD-9-CM ones
    (columns relabelled)."""
    from anonymizers import codesystems as cs
    source = str(path)
    with _open_binary(Path(path)) as f:
        names = _read_header(f, source, GEM_COLUMNS, [])
    table = read_table(path, GEM_COLUMNS)
    sources = pd.unique(cs.normalize(table["icd9cm"].to_numpy(dtype=object)))
    as_icd10 = int(cs.is_valid(sources, cs.ICD10CM).sum())
    as_icd9 = int(cs.is_valid(sources, cs.ICD9CM).sum())
    if names.index("icd10cm") < names.index("icd9cm") or as_icd10 > as_icd9:
        raise InputError(source, "a backward (ICD-10-CM -> ICD-9-CM) GEM: its source column "
                         "holds ICD-10-CM codes; the mapping needs CMS's forward ICD-9-CM -> "
                         "ICD-10-CM GEM (2018_I9gem), source column icd9cm first",
                         field="icd9cm")
    return table
