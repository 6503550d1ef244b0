"""VERPART's chunk growth for m = 2 (``verpart._grow_pairs``, on shared-record
counts) against the general k^m test on row bitmasks (``kmcheck.can_add``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.disassociation import verpart
from anonymizers.disassociation.kmcheck import row_masks
from anonymizers.disassociation.ragged import Part


@st.composite
def clusters(draw):
    n_records = draw(st.integers(1, 14))
    n_codes = draw(st.integers(1, 12))
    dense = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n_codes,
                                            max_size=n_codes),
                                   min_size=n_records, max_size=n_records)), dtype=bool)
    pos, codes = np.nonzero(dense)
    part = Part(np.arange(n_records), pos.astype(np.int64), codes.astype(np.int64))
    order = draw(st.permutations(list(range(n_codes))))
    waiting = [t for t in order if draw(st.booleans())] or order
    return part, n_codes, np.array(order, dtype=np.int64), waiting, draw(st.integers(1, 5))


@settings(max_examples=400)
@given(clusters(), st.booleans())
def test_pairs_growth_equals_the_general_test(case, dense):
    part, n_codes, order, waiting, k = case
    masks = dict(zip(order.tolist(), row_masks(part.dense(order, n_codes))))
    shared = verpart.SharedRecords(part, order, n_codes, dense=dense)
    support = shared.support()
    assert support.tolist() == part.dense(order, n_codes).sum(axis=0).tolist()
    column = {t: j for j, t in enumerate(order.tolist())}
    fast = verpart._grow_pairs(waiting, column, shared, (support > 0) & (support < k), k)
    assert fast == verpart._grow(waiting, masks, k, 2)


@pytest.mark.parametrize("dense", [True, False])
def test_codes_sharing_too_few_records(dense):
    # records: {0, 2}, {0, 2}, {1}, {0}; order positions: code 2 -> 0, 0 -> 1, 1 -> 2
    part = Part(np.arange(4), np.array([0, 0, 1, 1, 2, 3]), np.array([0, 2, 0, 2, 1, 0]))
    shared = verpart.SharedRecords(part, np.array([2, 0, 1]), 3, dense=dense)
    assert shared.support().tolist() == [2, 3, 1]
    assert shared.rare_with(1, 3).tolist() == [0]  # code 2 shares 2 records with code 0
    assert shared.rare_with(1, 2).tolist() == []
    assert shared.rare_with(2, 2).tolist() == [2]  # code 1 with itself: 1 record


@settings(max_examples=200)
@given(clusters(), st.lists(st.integers(-1, 3), min_size=12, max_size=12))
def test_verpart_is_the_same_on_both_paths(case, groups):
    """Small clusters keep the bitmask test, larger ones the shared-record
    counts (``verpart.SMALL``): both give the same partition."""
    part, n_codes, _, _, k = case
    constraint = np.array(groups[:n_codes], dtype=np.int64)
    sensitive = np.zeros(n_codes, dtype=bool)
    out = {}
    for small in (0, 10**9):
        saved, verpart.SMALL = verpart.SMALL, small
        try:
            p = verpart.verpart(part, k, 2, constraint, sensitive)
        finally:
            verpart.SMALL = saved
        out[small] = ([c.tolist() for c in p.chunks], p.item.tolist(), p.support)
    assert out[0] == out[10**9]
