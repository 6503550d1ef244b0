"""COPY a DataFrame into PostgreSQL as one stream (never row by row).

The frame is rendered to CSV one bounded chunk at a time, with Arrow's C++
writer, and handed to the driver's own COPY: psycopg 3's ``cursor.copy()``,
whose queued writer sends one chunk from its own thread while the next is
rendered, or psycopg2's ``copy_expert``, which pulls from a file-like object
while the next chunk is rendered ahead.  Rendering, sending and the server's
parsing overlap (the 113k-member loads are not slower than with a pipe), and
memory stays at a chunk or two.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from psycopg.copy import QueuedLibpqWriter

CHUNK_ROWS = 100_000
WRITE = pacsv.WriteOptions(include_header=False)
# psycopg2 asks its source for this many bytes at a time
READ_BYTES = 1 << 20


def copy_frame(cur, table: str, frame) -> None:
    """COPY ``frame`` into ``table``; its column names are the table's columns.
    ``cur`` is a psycopg 3 or a psycopg2 cursor; ``frame`` is a DataFrame or
    a source read a chunk at a time (an object with ``columns`` and
    ``chunks(rows)``, such as ``parquet_io.ParquetFrame``).

    Strings are quoted, so an empty string stays an empty string and an
    unquoted empty field is NULL.  A failure on either side raises, and the
    caller's transaction (rolled back) holds none of the rows.
    """
    sql = f"COPY {table} ({', '.join(frame.columns)}) FROM STDIN WITH (FORMAT csv)"
    if hasattr(cur, "copy"):  # psycopg 3
        with cur.copy(sql, writer=QueuedLibpqWriter(cur)) as copy:
            for data in _csv_chunks(frame):
                copy.write(data)
        return
    with contextlib.closing(_rendered_ahead(_csv_chunks(frame))) as chunks:
        reader = _ChunkReader(chunks)
        try:
            cur.copy_expert(sql, reader, size=READ_BYTES)
        except Exception:
            if reader.error is not None:  # psycopg2 turned it into QueryCanceled
                raise reader.error from None
            raise


def _rendered_ahead(chunks: Iterator) -> Iterator:
    """``chunks``, the next one rendered in a worker while the current one is
    sent; an error of the rendering is raised where the chunk is taken."""
    with ThreadPoolExecutor(1, thread_name_prefix="pgcopy-render") as worker:
        pending = worker.submit(next, chunks, None)
        while (chunk := pending.result()) is not None:
            pending = worker.submit(next, chunks, None)
            yield chunk


class _ChunkReader:
    """The file-like object psycopg2's ``copy_expert`` reads: ``read(size)``
    returns at most ``size`` bytes of the rendered chunks, b"" at the end.
    A rendering error ends the COPY (psycopg2 reports it as QueryCanceled)
    and is kept in ``error`` for the caller to raise as it was."""

    def __init__(self, chunks: Iterator[memoryview]):
        self._chunks = chunks
        self._buffer = memoryview(b"")
        self.error: BaseException | None = None

    def read(self, size: int = -1) -> bytes:
        while not self._buffer:
            try:
                data = next(self._chunks, None)
            except BaseException as exc:
                self.error = exc
                raise
            if data is None:
                return b""
            self._buffer = data
        if size < 0:
            size = len(self._buffer)
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out.tobytes()


def _csv_chunks(frame) -> Iterator[memoryview]:
    for chunk in _chunks(frame, CHUNK_ROWS):
        out = pa.BufferOutputStream()
        _write_csv(chunk, out)
        data = out.getvalue()
        if data.size:
            yield memoryview(data)


def _chunks(frame, rows: int):
    if isinstance(frame, pd.DataFrame):
        return (frame.iloc[start:start + rows] for start in range(0, len(frame), rows))
    return frame.chunks(rows)


def _write_csv(chunk: pd.DataFrame, out) -> None:
    try:
        table = pa.Table.from_pandas(chunk, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        # object columns Arrow cannot type (mixed values): as text, missing values kept
        text = {c: "string" for c in chunk.columns if chunk[c].dtype == object}
        table = pa.Table.from_pandas(chunk.astype(text), preserve_index=False)
    pacsv.write_csv(table, out, WRITE)
