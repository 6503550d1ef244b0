"""CSV and JSON I/O at the edges of the library, with errors that name the spot."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from anonymizers.errors import InputError


def read_table(path: str | Path, required: list[str],
               optional: list[str] = ()) -> pd.DataFrame:
    """Read a CSV (plain or gzip) as strings, checking columns and nulls.

    Raises InputError naming the file, the 1-based data row and the field for
    a missing column or an empty value in a required column.
    """
    path = Path(path)
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except pd.errors.EmptyDataError:
        raise InputError(str(path), "file is empty (no header)") from None
    df.columns = [c.strip().strip('"') for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise InputError(str(path), f"missing column(s) {missing}; found {list(df.columns)}",
                         field=missing[0])
    keep = list(required) + [c for c in optional if c in df.columns]
    df = df[keep]
    check_no_nulls(df, str(path), required)
    return df


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
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
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
