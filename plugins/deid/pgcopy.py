"""COPY a DataFrame into PostgreSQL as one stream (never row by row).

A thread renders the frame to CSV one bounded chunk at a time, with Arrow's
C++ writer, into a pipe that ``COPY ... FROM STDIN`` reads: rendering and the
server's parsing overlap, and memory stays at one chunk.
"""

from __future__ import annotations

import os
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

CHUNK_ROWS = 100_000
WRITE = pacsv.WriteOptions(include_header=False)


def copy_frame(cur, table: str, frame) -> None:
    """COPY ``frame`` into ``table``; its column names are the table's columns.
    ``frame`` is a DataFrame or a source read a chunk at a time (an object
    with ``columns`` and ``chunks(rows)``, such as ``parquet_io.ParquetFrame``).

    Strings are quoted, so an empty string stays an empty string and an
    unquoted empty field is NULL.  A failure on either side raises, and the
    caller's transaction (rolled back) holds none of the rows.
    """
    cols = ", ".join(frame.columns)
    read_fd, write_fd = os.pipe()
    errors: list[BaseException] = []
    with os.fdopen(read_fd, "rb") as reader:
        writer = threading.Thread(target=_render, args=(frame, os.fdopen(write_fd, "wb"), errors),
                                  daemon=True)
        writer.start()
        try:
            cur.copy_expert(f"COPY {table} ({cols}) FROM STDIN WITH (FORMAT csv)", reader)
        finally:
            reader.close()  # a writer still blocked on the pipe gets BrokenPipeError
            writer.join()
    if errors and not isinstance(errors[0], BrokenPipeError):
        raise errors[0]


def _chunks(frame, rows: int):
    if isinstance(frame, pd.DataFrame):
        return (frame.iloc[start:start + rows] for start in range(0, len(frame), rows))
    return frame.chunks(rows)


def _render(frame, out, errors: list) -> None:
    try:
        with out:
            for chunk in _chunks(frame, CHUNK_ROWS):
                _write_csv(chunk, out)
    except BaseException as exc:  # noqa: BLE001 - handed to the COPY's thread
        errors.append(exc)


def _write_csv(chunk: pd.DataFrame, out) -> None:
    try:
        table = pa.Table.from_pandas(chunk, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        # object columns Arrow cannot type (mixed values): as text, missing values kept
        text = {c: "string" for c in chunk.columns if chunk[c].dtype == object}
        table = pa.Table.from_pandas(chunk.astype(text), preserve_index=False)
    pacsv.write_csv(table, out, WRITE)
