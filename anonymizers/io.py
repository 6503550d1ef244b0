"""CSV and JSON I/O at the edges of the library, with errors that name the spot."""

from __future__ import annotations

import csv
import gzip
import json
import re
import zlib
from pathlib import Path

import pandas as pd

from anonymizers.errors import InputError

# A header names a few columns; a first line longer than this is not one (a
# file without a header, or not a CSV file), and parsing it would take minutes.
HEADER_LIMIT = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


def read_table(path: str | Path, required: list[str],
               optional: list[str] = ()) -> pd.DataFrame:
    """Read a CSV (plain or gzip, UTF-8) as strings, checking its shape.

    The first line is the header.  Raises InputError naming the file, the
    1-based data row (blank lines are not counted) and the field for: a file
    that is missing or unreadable, not UTF-8, without a header naming every
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
