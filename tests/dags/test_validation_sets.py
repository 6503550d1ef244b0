"""GX gates with large value sets, validated on a membership column: the same
verdicts as GX's own in-set and not-in-set expectations, in the same order."""

from __future__ import annotations

import great_expectations as gx
import pandas as pd
import pytest
from deid import validation
from hypothesis import given, settings
from hypothesis import strategies as st

E = gx.expectations


def _both(monkeypatch, df, expectations):
    """The gates with every value set tested on a membership column, then
    with every value set given to GX as it is."""
    monkeypatch.setattr(validation, "LARGE_SET", 0)
    derived = validation.run_suite("t", df, expectations)
    monkeypatch.setattr(validation, "LARGE_SET", 10**9)
    direct = validation.run_suite("t", df, expectations)
    return derived, direct


def test_large_sets_keep_order_verdicts_and_the_column_list(monkeypatch):
    ids = [f"P{i:05d}" for i in range(3000)]
    df = pd.DataFrame({"member_id": ids[:2500] + [None], "code": ["250"] * 2501})
    expectations = [E.ExpectTableColumnsToMatchOrderedList(column_list=["member_id", "code"]),
                    E.ExpectColumnValuesToBeInSet(column="member_id", value_set=ids),
                    E.ExpectColumnValuesToNotBeInSet(column="member_id", value_set=ids[2500:]),
                    E.ExpectColumnValuesToBeInSet(column="member_id", value_set=ids[1:]),
                    E.ExpectColumnValuesToNotBeInSet(column="member_id", value_set=ids[2499:])]
    gates = validation.run_suite("members", df, expectations)
    assert [g.ok for g in gates] == [True, True, True, False, False]
    assert [g.expectation for g in gates] == [
        "expect_table_columns_to_match_ordered_list", "expect_column_values_to_be_in_set",
        "expect_column_values_to_not_be_in_set", "expect_column_values_to_be_in_set",
        "expect_column_values_to_not_be_in_set"]
    assert {g.table for g in gates} == {"members"}
    assert "value_set=<3000 values>" in gates[1].kwargs and "column=member_id" in gates[1].kwargs
    derived, direct = _both(monkeypatch, df, expectations)
    assert derived == direct  # the audit reads the same gates either way


values = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "", " a", "A"]))


@settings(max_examples=25, deadline=None)
@given(st.lists(values, min_size=1, max_size=30), st.sets(st.sampled_from(list("abcdA")) | st.just(""),
                                                          max_size=5),
       st.sampled_from([1.0, 0.5]))
def test_membership_column_gives_gx_own_verdicts(column, value_set, mostly):
    with pytest.MonkeyPatch.context() as mp:
        df = pd.DataFrame({"x": pd.Series(column, dtype=object)})
        expectations = [E.ExpectColumnValuesToBeInSet(column="x", value_set=sorted(value_set),
                                                      mostly=mostly),
                        E.ExpectColumnValuesToNotBeInSet(column="x",
                                                         value_set=sorted(value_set),
                                                         mostly=mostly)]
        derived, direct = _both(mp, df, expectations)
    assert derived == direct, (column, value_set, mostly)
