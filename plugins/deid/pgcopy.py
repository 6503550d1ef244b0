"""COPY a DataFrame into PostgreSQL in bounded chunks (never row by row)."""

from __future__ import annotations

import io

import pandas as pd

CHUNK_ROWS = 500_000


def copy_frame(cur, table: str, frame: pd.DataFrame) -> None:
    """COPY ``frame`` into ``table``; its column names are the table's columns.

    Memory stays at one chunk's CSV text; NULL is written as ``\\N``.
    """
    cols = ", ".join(frame.columns)
    sql = f"COPY {table} ({cols}) FROM STDIN WITH (FORMAT csv, NULL '\\N')"
    for start in range(0, max(len(frame), 1), CHUNK_ROWS):
        buf = io.StringIO()
        frame.iloc[start:start + CHUNK_ROWS].to_csv(buf, index=False, header=False,
                                                    na_rep="\\N")
        buf.seek(0)
        cur.copy_expert(sql, buf)
