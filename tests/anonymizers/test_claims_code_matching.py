"""Code matching of the screening rules (``anonymizers.claims.codes``): the
per-distinct-code index and the split of ``other_dx_codes`` against plain
per-row references."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.claims.codes import CodeIndex, split_code_lists, undotted

# code characters, both list separators, ASCII and Unicode whitespace (also
# the ASCII separators \x1c-\x1f that str.split and \s treat as whitespace),
# a non-ASCII letter and a dot
ALPHABET = "0V9E.;,ab \t\n\x0b\x0c\r\x1c\x1f\u00a0\u2003\u3000é"
texts = st.lists(st.text(ALPHABET, max_size=12), max_size=30)
prefixes = st.lists(st.text("0V9Eab", min_size=1, max_size=3), max_size=4).map(tuple)


def reference_split(values: list[str]) -> list[list[str]]:
    """The regular-expression split the screening rules were first written
    with, without its empty pieces (they match no rule)."""
    return [[p for p in re.split(r"[;,\s]+", v) if p] for v in values]


def pieces_of(owner: np.ndarray, index: CodeIndex, n: int) -> list[list[str]]:
    out: list[list[str]] = [[] for _ in range(n)]
    for who, code in zip(owner.tolist(), index.index.tolist()):
        out[who].append(index.uniques[code])
    return out


@settings(max_examples=300)
@given(texts)
def test_split_equals_the_regular_expression(values):
    owner, index = split_code_lists(values)
    assert pieces_of(owner, index, len(values)) == reference_split(values)


@settings(max_examples=200)
@given(st.lists(st.text("0V9E.;, \t\x1c", max_size=12), max_size=30))
def test_ascii_fast_path_equals_the_regular_expression(values):
    owner, index = split_code_lists(values)
    assert np.all(np.diff(owner) >= 0)
    assert pieces_of(owner, index, len(values)) == reference_split(values)


@settings(max_examples=200)
@given(texts, st.integers(0, 3))
def test_split_of_an_arrow_array_equals_the_split_of_its_list(values, cut):
    """The screening passes its distinct lists as Arrow; a slice (an array
    not at offset 0, of either string type) splits as its Python list."""
    for kind in (pa.string(), pa.large_string()):
        arrow = pa.array(["skip;ped"] * cut + values + ["tail é"], kind).slice(cut, len(values))
        owner, index = split_code_lists(arrow)
        assert pieces_of(owner, index, len(values)) == reference_split(values)
        chunked = pa.chunked_array([arrow[:cut], arrow[cut:]], kind)
        owner, index = split_code_lists(chunked)
        assert pieces_of(owner, index, len(values)) == reference_split(values)


def test_split_refuses_arrow_nulls_and_non_text():
    with pytest.raises(ValueError, match="no nulls"):
        split_code_lists(pa.array(["4019", None]))
    with pytest.raises(TypeError, match="hold strings, not int64"):
        split_code_lists(pa.array([4019]))


def test_split_of_nothing_and_of_separators_only():
    for values in ([], [""], [";, \t"], ["", "", ""]):
        owner, index = split_code_lists(values)
        assert len(owner) == 0 and len(index.index) == 0


@settings(max_examples=300)
@given(st.lists(st.text("0V9Eab", max_size=5), max_size=40), prefixes,
       st.lists(st.text("0V9Eab", max_size=5), max_size=4))
def test_index_hits_equal_per_row_matching(codes, starts, exact):
    expected = np.array([(bool(c) and c.startswith(starts) if starts else False)
                         or c in exact for c in codes], dtype=bool)
    got = CodeIndex(codes).hits(starts, exact)
    assert got.dtype == bool and got.tolist() == expected.tolist()
    arrow = CodeIndex.of_arrow(pa.array(codes, pa.large_string()))
    assert arrow.hits(starts, exact).tolist() == expected.tolist()


def test_missing_codes_match_nothing():
    hits = CodeIndex(["V22", None, float("nan"), "V22"]).hits(("V",), ("V22",))
    assert hits.tolist() == [True, False, False, True]


def reference_undotted(values) -> list[str]:
    return ["" if v is None or (isinstance(v, float) and v != v)
            else str(v).strip().replace(".", "").upper() for v in values]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.text(ALPHABET + "xyzß", max_size=8), st.none(),
                          st.just(float("nan"))), max_size=30))
def test_undotted_equals_per_value_cleaning(values):
    out = undotted(values)
    assert out.dtype == object and out.tolist() == reference_undotted(values)


@settings(max_examples=200)
@given(st.lists(st.text("0v9e. \t\x1c\x1fab", max_size=8), max_size=30))
def test_undotted_ascii_fast_path(values):
    assert undotted(values).tolist() == reference_undotted(values)


def test_undotted_numbers_and_mixed_values():
    assert undotted([4019, "v22.1 "]).tolist() == ["4019", "V221"]
    assert undotted(np.array([3.5, 2.0])).tolist() == ["35", "20"]
    assert undotted([]).tolist() == []
