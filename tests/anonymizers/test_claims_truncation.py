"""Truncation of claims per member (El Emam et al. 2012, appendix section 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.claims.truncation import (
    removed_claims,
    scores,
    truncate_table,
    truncation_threshold,
)
from anonymizers.errors import ParameterError


def hand_case() -> pd.DataFrame:
    rows = [("A", "AMI", "OFFICE"), ("A", "AMI", "HOME"), ("A", "UTI", "OFFICE"),
            ("A", "CHF", "OFFICE"), ("B", "AMI", "OFFICE"), ("C", "UTI", "OFFICE"),
            ("D", "AMI", "HOME"), ("D", "UTI", "OFFICE")]
    return pd.DataFrame(rows, columns=["member", "dx", "pos"])


def test_truncation_worked_by_hand():
    # N = 4.  Holders: AMI {A,B,D}, UTI {A,C,D}, CHF {A}, OFFICE {A,B,C,D}, HOME {A,D};
    # sup = holders - 1 (other members).  s = 1 - min(sup)/N:
    # A1 (AMI, OFFICE) 1 - 2/4 = .5; A2 (AMI, HOME) 1 - 1/4 = .75; A3 (UTI, OFFICE) .5;
    # A4 (CHF, OFFICE) 1 - 0/4 = 1; B .5; C .5; D1 (AMI, HOME) .75; D2 .5.
    # Counts 4, 1, 1, 2: the 75th percentile (nearest rank) is 2, so A loses A4 and A2.
    df = hand_case()
    kept, t, s = truncate_table(df, "member", ["dx", "pos"], percentile=75)
    assert t == 2
    assert s.tolist() == [0.5, 0.75, 0.5, 1.0, 0.5, 0.5, 0.75, 0.5]
    assert kept.index.tolist() == [0, 2, 4, 5, 6, 7]


def test_ties_remove_the_later_claim_first():
    df = pd.DataFrame({"member": ["A"] * 3 + ["B"], "dx": ["X"] * 4,
                       "day": [5, 1, 3, 2]})
    kept, t, _ = truncate_table(df, "member", ["dx"], percentile=50, time_col="day")
    assert t == 1
    assert kept.index.tolist() == [1, 3]  # A keeps its earliest claim (day 1)


def test_nearest_rank_percentile():
    assert truncation_threshold(np.arange(1, 101)) == 95
    assert truncation_threshold(np.array([1] * 19 + [100])) == 1
    assert truncation_threshold(np.array([7])) == 7
    assert truncation_threshold(np.array([], dtype=int)) == 0
    with pytest.raises(ParameterError):
        truncation_threshold(np.array([1]), 0)


@given(st.lists(st.integers(1, 60), min_size=1, max_size=50), st.floats(1, 100))
def test_threshold_is_numpys_inverted_cdf(counts, q):
    assert truncation_threshold(np.array(counts), q) == int(
        np.percentile(counts, q, method="inverted_cdf"))


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.integers(0, 3)),
                min_size=1, max_size=60), st.integers(1, 6))
def test_removal_keeps_exactly_the_threshold_and_the_lowest_scores(rows, t):
    rows.sort(key=lambda r: r[0])
    member = np.unique([r[0] for r in rows], return_inverse=True)[1].ravel()
    labels = [np.array([r[1] for r in rows]), np.array([r[2] for r in rows])]
    n = np.bincount(member)
    s = scores(member, labels, len(n))
    gone = removed_claims(member, n, s, np.arange(len(rows)), t)
    for m in range(len(n)):
        mine = np.flatnonzero(member == m)
        kept = mine[~gone[mine]]
        assert len(kept) == min(n[m], t)
        if len(kept) < len(mine):
            assert s[kept].max() <= s[mine[gone[mine]]].min()
