"""Screening per member range: the ranges cover every member once, in the
order PostgreSQL's C collation compares them, and a quote in an id is safe."""

from __future__ import annotations

import pandas as pd
import pytest
from deid import screening
from deid.steps import Run

pytestmark = pytest.mark.warehouse


def _claims(run: Run, ids: list[str]) -> None:
    pd.DataFrame({"patient_id": ids, "claim_id": "c", "service_date": pd.Timestamp("2009-01-01"),
                  "age_at_service": 50, "code": "4019"}).to_parquet(run.path("claims.parquet"))


def test_ranges_cover_every_member_once_and_respect_the_task_cap(monkeypatch):
    run = Run("screen_ranges_test", "r1")
    ids = [f"{i:04X}" for i in range(0, 500, 3)] + ["a", "B", "é"]
    _claims(run, ids)
    batches = screening.plan(run, batch_members=40)
    ranges = run.read_json(screening.PLAN)
    assert [b["index"] for b in batches] == list(range(len(ranges))) and len(ranges) == 5
    flat = sorted(ids)
    covered = [i for lo, hi in ranges for i in flat if lo <= i <= hi]
    assert covered == flat
    monkeypatch.setattr(screening, "MAX_BATCHES", 2)
    assert len(screening.plan(run, batch_members=1)) == 2


def test_range_scope_selects_the_same_members_in_sql(warehouse):
    ids = ["0A", "0a", "B'1", "b", "Z", "é"]
    lo, hi = sorted(ids)[1], sorted(ids)[4]
    scope = screening.range_scope("TRUE", lo, hi)
    query = ("SELECT c.desynpuf_id FROM unnest(%s::text[]) AS c(desynpuf_id) "
             f"WHERE {scope.replace('%', '%%')} ORDER BY c.desynpuf_id COLLATE \"C\"")
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(query, (ids,))
        assert [r[0] for r in cur.fetchall()] == sorted(ids)[1:5]
