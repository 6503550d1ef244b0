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
    sizes = [sum(lo <= i <= hi for i in flat) for lo, hi in ranges]
    assert max(sizes) <= 40 and max(sizes) - min(sizes) <= 1
    monkeypatch.setattr(screening.staging, "MAX_MAPPED", 2)
    assert len(screening.plan(run, batch_members=1)) == 2


def test_each_range_gets_all_the_claims_of_its_members(empty_source):
    from tools.demo_data import load_synthetic
    from deid.extract import extract_claims_table, extract_to_parquet

    load_synthetic(n_members=150, seed=3)
    run = Run("screen_ranges_test", "r2")
    extract_to_parquet(run.path("claims.parquet"))
    batches = screening.plan(run, batch_members=40)
    ranges = run.read_json(screening.PLAN)
    assert len(batches) == len(ranges) == 4
    parts = [pd.read_parquet(run.path(f"screen_claims.b{i}.parquet")) for i in range(4)]
    for (lo, hi), part in zip(ranges, parts):
        assert part["member_id"].between(lo, hi).all() and len(part)
    extract_claims_table(run.path("all.parquet"))
    everything = pd.read_parquet(run.path("all.parquet"))
    extracted = set(pd.read_parquet(run.path("claims.parquet"))["patient_id"])
    expected = everything[everything["member_id"].isin(extracted)]
    got = pd.concat(parts)
    assert len(got) == len(expected)
    assert sorted(got["claim_id"]) == sorted(expected["claim_id"])


def test_combine_with_ranges_that_remove_nobody_and_is_safe_to_retry():
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = Run("screen_ranges_test", "r3")
    _claims(run, ["a", "b", "c", "d"])
    for i, removed in enumerate([[], ["b"], []]):
        pq.write_table(pa.table({"member_id": pa.array(removed, pa.string())}),
                       run.path(f"screen_removed.b{i}.parquet"))
    assert screening.combine(run, 3) == {"members_removed": 1, "rows_removed": 1, "rows_kept": 3}
    assert screening.combine(run, 3)["rows_kept"] == 3  # a retry finds its inputs
    assert sorted(pd.read_parquet(run.path("claims.parquet"))["patient_id"]) == ["a", "c", "d"]
