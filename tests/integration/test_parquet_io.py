"""Staged Parquet read and written a batch at a time (issue #7)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from deid import parquet_io as pio
from hypothesis import given, settings
from hypothesis import strategies as st

ODD = ["id\x00", "\u2028", "", "a,b", "ü", "p1"]


@pytest.fixture
def staged(tmp_path):
    path = tmp_path / "x.parquet"
    with pio.ParquetAppender({"x": path}, {"code": "string", "patient_id": "string"}) as out:
        for b in range(4):
            n = 0 if b == 2 else 5  # an empty batch keeps the schema
            out.append({"x": pd.DataFrame({
                "cluster_id": np.arange(b * 5, b * 5 + n, dtype=np.int64),
                "patient_id": [ODD[(b + j) % len(ODD)] for j in range(n)],
                "code": [f"c{(b * j) % 4}" for j in range(n)]})})
    return path


def test_appended_batches_are_row_groups_of_one_file(staged):
    groups = list(pio.row_groups(staged, ["code"]))
    assert [len(g) for g in groups] == [5, 5, 0, 5] and list(groups[0].columns) == ["code"]
    whole = pd.read_parquet(staged)
    assert len(whole) == 15 and whole["cluster_id"].dtype == np.int64


def test_batches_read_by_range_and_by_ids(staged):
    assert pio.rows_between(staged, "cluster_id", 5, 15)["cluster_id"].tolist() == \
        list(range(5, 10))  # the empty batch between adds nothing
    got = pio.rows_of(staged, "patient_id", ["id\x00", "\u2028"], ["patient_id"])
    whole = pd.read_parquet(staged)
    assert sorted(got["patient_id"]) == sorted(whole["patient_id"][whole["patient_id"].isin(
        ["id\x00", "\u2028"])])
    assert pio.rows_of(staged, "patient_id", []).empty


def test_small_indexes(staged):
    whole = pd.read_parquet(staged)
    assert pio.distinct(staged, "patient_id").tolist() == sorted(whole["patient_id"].unique())
    assert pio.distinct(staged, "code").tolist() == ["c0", "c1", "c2", "c3"]
    assert pio.min_max(staged, "cluster_id") == (0, 19)


def test_an_empty_file(tmp_path):
    path = tmp_path / "e.parquet"
    with pio.ParquetAppender({"e": path}, {"code": "string"}) as out:
        out.append({"e": pd.DataFrame({"cluster_id": [], "code": []})})
    assert pio.min_max(path, "cluster_id") == (None, None)
    assert pio.distinct(path, "code").tolist() == []
    assert len(pio.ParquetFrame(path)) == 0 and list(pio.ParquetFrame(path).chunks(3)) == []


def test_null_ids_are_counted(tmp_path):
    path = tmp_path / "n.parquet"
    pd.DataFrame({"cluster_id": [1, None, 3, None]}, dtype="Int64").to_parquet(
        path, row_group_size=2)
    assert pio.null_count(path, "cluster_id") == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ODD + ["p2", "p3", "q"]), max_size=40),
       st.integers(1, 8), st.integers(1, 10))
def test_id_ranges_hold_whole_ids_and_at_most_max_rows(tmp_path_factory, ids, group, most):
    path = tmp_path_factory.mktemp("r") / "r.parquet"
    pd.DataFrame({"patient_id": pd.Series(ids, dtype="str"), "row": range(len(ids))}).to_parquet(
        path, row_group_size=group)
    ranges = pio.id_ranges(path, "patient_id", most)
    parts = [pio.rows_between(path, "patient_id", lo, hi) for lo, hi in ranges]
    assert sorted(r for p in parts for r in p["row"]) == list(range(len(ids)))  # each row once
    for p in parts:
        assert len(p) <= most or p["patient_id"].nunique() == 1
    assert [lo for lo, _ in ranges] == sorted(lo for lo, _ in ranges)
    if ids:  # greedy: a range stops only where the next id would pass the bound
        counts = pd.Series(ids).value_counts()
        for p, (_, hi) in zip(parts, ranges):
            assert hi is None or len(p) + counts[hi] > most


def test_id_ranges_refuse_null_ids(tmp_path):
    path = tmp_path / "n.parquet"
    pd.DataFrame({"patient_id": ["b", "a", "b"]}).to_parquet(path)
    assert pio.id_ranges(path, "patient_id", 2) == [("a", "b"), ("b", None)]
    pd.DataFrame({"patient_id": ["b", None, "a"]}).to_parquet(path)
    with pytest.raises(ValueError, match="n.parquet: patient_id has empty values"):
        pio.id_ranges(path, "patient_id", 2)


def test_an_empty_release_still_shows_the_verifier_its_columns(tmp_path):
    from deid.methods.hhp import ReleasedClaims

    path = tmp_path / "c.parquet"
    pd.DataFrame({"member_id": pd.Series(dtype="str"), "dx": pd.Series(dtype="str")}).to_parquet(
        path)
    chunks = list(ReleasedClaims(path).chunks())
    assert [list(c.columns) for c in chunks] == [["member_id", "dx"]] and len(chunks[0]) == 0
