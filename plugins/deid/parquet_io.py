"""Staged Parquet read and written a bounded piece at a time (issue #7: no
task holds more than its own batch plus small indexes).

- ``ParquetAppender`` writes tables batch by batch, one row group (or more)
  per ``append``, with fixed column types so that an empty batch does not
  change a file's schema;
- ``rows_between`` / ``rows_of`` read the rows of one batch, by an id range
  or an id set (row groups whose statistics exclude the batch are skipped;
  the others are decoded a slice at a time and filtered);
- ``row_groups`` yields a file one row group at a time;
- ``distinct`` is the sorted distinct values of one column, reduced row group
  by row group (a small index: codes, patient ids);
- ``id_ranges`` cuts a column's sorted values into ranges of at most so many
  rows, for batches of whole patients;
- ``ParquetFrame`` is a file the load streams into COPY by row group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

TYPES = {"string": pa.string(), "int64": pa.int64()}


class ParquetAppender:
    """``{name: path}`` files appended to frame by frame; ``types`` maps a
    column name to "string" (every other column is int64)."""

    def __init__(self, paths: dict[str, Path], types: dict[str, str]):
        self.paths, self.types, self.writers = paths, types, {}

    def __enter__(self) -> "ParquetAppender":
        return self

    def append(self, frames: dict[str, pd.DataFrame]) -> None:
        for name, frame in frames.items():
            schema = pa.schema([(c, TYPES[self.types.get(c, "int64")]) for c in frame.columns])
            if name not in self.writers:
                self.writers[name] = pq.ParquetWriter(self.paths[name], schema)
            table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
            self.writers[name].write_table(table)

    def __exit__(self, *exc) -> None:
        for writer in self.writers.values():
            writer.close()


def rows_between(path: Path, column: str, lo, hi=None,
                 columns: list[str] | None = None) -> pd.DataFrame:
    """Rows with ``lo <= column < hi`` (no upper bound when ``hi`` is None)."""
    field = ds.field(column)
    return _scan(path, column, (field >= lo) & (field < hi) if hi is not None else field >= lo,
                 columns)


def rows_of(path: Path, column: str, values, columns: list[str] | None = None) -> pd.DataFrame:
    """Rows whose ``column`` is one of ``values``."""
    values = pa.array(np.asarray(values, dtype=object) if len(values) else [],
                      type=pq.read_schema(path).field(column).type)
    return _scan(path, column, pc.is_in(ds.field(column), value_set=values), columns)


SCAN_ROWS = 65_536  # rows decoded at a time by _scan


def _scan(path: Path, column: str, expression, columns=None) -> pd.DataFrame:
    """The rows ``expression`` (over ``column``) keeps, in file order.  Arrow's
    dataset layer picks the row groups whose statistics may match; they are
    then decoded ``SCAN_ROWS`` rows at a time and filtered, so that memory
    holds the matching rows and one slice (a whole-file filtered scan held
    about 150 MB more at 113,000 members, the decoded row groups it reads ahead)."""
    f = pq.ParquetFile(path)
    names = columns or f.schema_arrow.names
    fragment = next(iter(ds.dataset(path, format="parquet").get_fragments()), None)
    groups = [g.id for g in fragment.subset(expression).row_groups] if fragment else []
    read = names if column in names else [*names, column]
    parts = [b.filter(expression).select(names) for b in
             f.iter_batches(SCAN_ROWS, row_groups=groups, columns=read)] if groups else []
    return pa.Table.from_batches(parts, f.schema_arrow.empty_table().select(names).schema) \
        .to_pandas()


def row_groups(path: Path, columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
    """The file one row group at a time (a file with no row group: one empty frame)."""
    f = pq.ParquetFile(path)
    if f.num_row_groups == 0:
        yield f.schema_arrow.empty_table().select(columns or f.schema_arrow.names).to_pandas()
    for i in range(f.num_row_groups):
        yield f.read_row_group(i, columns=columns).to_pandas()


def distinct(path: Path, column: str) -> np.ndarray:
    """Sorted distinct non-null values of ``column``."""
    f = pq.ParquetFile(path)
    seen = [pc.unique(f.read_row_group(i, columns=[column]).column(0).combine_chunks())
            for i in range(f.num_row_groups)]
    if not seen:
        return np.zeros(0, dtype=object)
    values = pc.unique(pa.concat_arrays([s.cast(seen[0].type) for s in seen])).drop_null()
    return np.sort(np.asarray(values.to_pylist(), dtype=object))


def id_ranges(path: Path, column: str, max_rows: int) -> list[tuple]:
    """Consecutive ranges ``(lo, hi)`` of the sorted distinct values of
    ``column`` (``hi`` None: no upper bound), for ``rows_between``: each holds
    whole values and at most ``max_rows`` rows, unless one value alone has
    more.  The rows per value are counted row group by row group (a small
    index: one count per patient).  A null value is an error: its rows
    would be in no range."""
    f = pq.ParquetFile(path)
    parts = [pc.value_counts(f.read_row_group(i, columns=[column]).column(0).combine_chunks())
             for i in range(f.num_row_groups)]
    if not parts:
        return []
    counts = pd.concat([pd.Series(p.field("counts").to_numpy(zero_copy_only=False),
                                  index=p.field("values").to_pylist()) for p in parts])
    if counts.index.isna().any():  # such rows would be in no batch, so never checked
        raise ValueError(f"{Path(path).name}: {column} has empty values")
    counts = counts.groupby(level=0).sum().sort_index()
    total = np.cumsum(counts.to_numpy())
    values, cuts, start = counts.index.tolist(), [], 0
    while start < len(values):
        cuts.append(start)
        before = total[start - 1] if start else 0
        start = max(start + 1, int(np.searchsorted(total, before + max_rows, side="right")))
    return list(zip([values[i] for i in cuts], [values[i] for i in cuts[1:]] + [None]))


def min_max(path: Path, column: str) -> tuple:
    """(min, max) of ``column``, or (None, None) when it has no value."""
    f = pq.ParquetFile(path)
    parts = [pc.min_max(f.read_row_group(i, columns=[column]).column(0))
             for i in range(f.num_row_groups)]
    lows = [p["min"].as_py() for p in parts if p["min"].is_valid]
    highs = [p["max"].as_py() for p in parts if p["max"].is_valid]
    return (min(lows), max(highs)) if lows else (None, None)


def null_count(path: Path, column: str) -> int:
    """Rows whose ``column`` is null (from the row groups' statistics when they have them)."""
    f = pq.ParquetFile(path)
    return sum(pc.count(f.read_row_group(i, columns=[column]).column(0), mode="only_null").as_py()
               for i in range(f.num_row_groups))


class ParquetFrame:
    """A staged table the load streams: its ``columns``, ``len`` and ``chunks``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        meta = pq.ParquetFile(self.path).metadata
        self.columns = pq.read_schema(self.path).names
        self.rows = meta.num_rows

    def __len__(self) -> int:
        return self.rows

    def chunks(self, rows: int) -> Iterator[pd.DataFrame]:
        for batch in pq.ParquetFile(self.path).iter_batches(batch_size=rows):
            yield batch.to_pandas()
