"""copy_frame: one streamed COPY, through psycopg 3's cursor.copy() or
psycopg2's copy_expert; NULL and empty strings kept apart; a failure on either
side raises and leaves nothing behind."""

from __future__ import annotations

import contextlib
import datetime as dt

import numpy as np
import pandas as pd
import psycopg
import psycopg2
import pytest
from deid import pgcopy

pytestmark = pytest.mark.warehouse
DRIVERS = ("psycopg2", "psycopg3")
# what each driver raises for a value the column's type refuses
DATA_ERROR = {"psycopg2": psycopg2.DataError, "psycopg3": psycopg.DataError}


@contextlib.contextmanager
def _cursor(warehouse, driver: str):
    """A cursor in one transaction: committed on success, rolled back on error."""
    if driver == "psycopg2":
        with warehouse.connect() as conn, conn.cursor() as cur:
            yield cur
        return
    with psycopg.connect(warehouse.dsn()) as conn, conn.cursor() as cur:
        yield cur

DDL = "CREATE TEMP TABLE t (i bigint, s text, d date, b boolean)"


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"i": np.arange(n), "s": ["x,\"y\"\n", "", None, "ü"] * (n // 4),
                         "d": [dt.date(2008, 1, 1)] * n, "b": [True, False] * (n // 2)})


@pytest.mark.parametrize("driver", DRIVERS)
def test_rows_nulls_and_empty_strings_survive(driver, warehouse, monkeypatch):
    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 7)  # several chunks
    frame = _frame(40)
    with _cursor(warehouse, driver) as cur:
        cur.execute(DDL)
        pgcopy.copy_frame(cur, "t", frame)
        cur.execute("SELECT i, s, d, b FROM t ORDER BY i")
        rows = cur.fetchall()
    assert [r[1] for r in rows] == [None if pd.isna(s) else s for s in frame["s"]]
    assert sum(r[1] == "" for r in rows) == 10
    assert [r[0] for r in rows] == list(range(40)) and rows[0][2] == dt.date(2008, 1, 1)
    assert [r[3] for r in rows] == frame["b"].tolist()


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_empty_frame_copies_nothing(driver, warehouse):
    with _cursor(warehouse, driver) as cur:
        cur.execute(DDL)
        pgcopy.copy_frame(cur, "t", _frame(0))
        cur.execute("SELECT count(*) FROM t")
        assert cur.fetchone()[0] == 0


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_rendering_failure_raises_and_the_transaction_keeps_nothing(driver, warehouse,
                                                                      monkeypatch):
    calls = []

    def failing(chunk, out):
        calls.append(len(chunk))
        if len(calls) == 2:
            raise RuntimeError("render failed")
        out.write(b"1,a,2008-01-01,true\n")

    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 10)
    monkeypatch.setattr(pgcopy, "_write_csv", failing)
    with warehouse.connect() as conn:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS public.copy_probe (i bigint, s text, "
                        "d date, b boolean)")
            cur.execute("TRUNCATE public.copy_probe")
    with pytest.raises(RuntimeError, match="render failed"):
        with _cursor(warehouse, driver) as cur:
            pgcopy.copy_frame(cur, "public.copy_probe", _frame(40))
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM public.copy_probe")
        assert cur.fetchone()[0] == 0
        cur.execute("DROP TABLE public.copy_probe")


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_server_error_raises_without_hanging(driver, warehouse, monkeypatch):
    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 5)
    bad = pd.DataFrame({"i": ["not a number"] * 50000, "s": "x", "d": dt.date(2008, 1, 1),
                        "b": True})
    with _cursor(warehouse, driver) as cur:
        cur.execute(DDL)
        with pytest.raises(DATA_ERROR[driver]):
            pgcopy.copy_frame(cur, "t", bad)


@pytest.mark.parametrize("driver", DRIVERS)
def test_mixed_object_columns_go_as_text_with_nulls_kept(driver, warehouse):
    frame = pd.DataFrame({"i": [1, 2, 3], "s": pd.Series([7, "x", None], dtype=object),
                          "d": dt.date(2008, 1, 1), "b": True})
    with _cursor(warehouse, driver) as cur:
        cur.execute(DDL)
        pgcopy.copy_frame(cur, "t", frame)
        cur.execute("SELECT s FROM t ORDER BY i")
        assert [r[0] for r in cur.fetchall()] == ["7", "x", None]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_parquet_file_streams_by_chunks(driver, warehouse, monkeypatch, tmp_path):
    from deid.parquet_io import ParquetAppender, ParquetFrame

    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 5)
    with ParquetAppender({"t": tmp_path / "t.parquet"}, {"s": "string"}) as out:
        for lo, n in ((0, 0), (0, 12), (12, 0), (12, 6)):  # empty batches too
            out.append({"t": pd.DataFrame({"i": np.arange(lo, lo + n),
                                           "s": [f"s{j}" if j % 3 else "" for j in
                                                 range(lo, lo + n)]})})
    source = ParquetFrame(tmp_path / "t.parquet")
    assert len(source) == 18 and source.columns == ["i", "s"]
    with _cursor(warehouse, driver) as cur:
        cur.execute("CREATE TEMP TABLE p (i bigint, s text)")
        pgcopy.copy_frame(cur, "p", source)
        cur.execute("SELECT i, s FROM p ORDER BY i")
        rows = cur.fetchall()
    want = [(j, f"s{j}" if j % 3 else "") for j in range(18)]
    assert rows == want
