"""Adversary power (El Emam et al. 2012, appendix section 4): Simpson index,
diversity, eta cap and equation (1)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.claims.adversary import (
    adversary_power,
    eta_cap,
    member_simpson,
    simpson_index,
)


def test_worked_example_of_section_4_1():
    # X = (AMI, AMI, AMI, UTI, RENAL3, RENAL3): n = (3, 1, 2), N = 6.  The printed terms
    # 3(2)/6(5) three times sum to 0.6; the result 0.27 is 3(2)/30 + 1(0)/30 + 2(1)/30.
    d = simpson_index(["AMI", "AMI", "AMI", "UTI", "RENAL3", "RENAL3"])
    assert d == pytest.approx(8 / 30)
    assert round(d, 2) == 0.27
    assert 3 * 2 / (6 * 5) * 3 == pytest.approx(0.6)  # the garbled reading is not 0.27


def test_degenerate_and_extreme_cases():
    assert simpson_index(["AMI"]) == 1.0          # N = 1: D = 1 by the paper's rule
    assert simpson_index([]) == 1.0
    assert simpson_index(["A", "A", "A"]) == 1.0  # no diversity
    assert simpson_index(["A", "B", "C"]) == 0.0  # every pair differs


@given(st.lists(st.lists(st.sampled_from("ABCDE"), min_size=1, max_size=12), min_size=1,
                max_size=8))
def test_member_simpson_matches_the_definition(members):
    rows = [(i, v, c) for i, vals in enumerate(members) for v, c in Counter(vals).items()]
    m = np.array([r[0] for r in rows])
    c = np.array([r[2] for r in rows], dtype=float)
    got = member_simpson(m, c, np.array([len(v) for v in members]))
    assert got == pytest.approx([simpson_index(v) for v in members])


def test_equation_1():
    eta = np.array([2.0, 4.0, 1.0, 3.0])
    pi = np.array([0.5, 0.5, 0.0, 0.75])
    # ratios 4, 8, (pi = 0: the max over pi > 0) 8, 4; p = 4/8 * r + 1 = 3, 5, 5, 3
    assert adversary_power(eta, pi, 5).tolist() == [3, 5, 5, 3]


def test_no_diversity_gives_the_maximum():
    assert adversary_power(np.array([3.0, 1.0]), np.zeros(2), 5).tolist() == [5, 5]


def test_rounding_of_the_bracket():
    eta, pi = np.array([3.0, 8.0]), np.array([1.0, 1.0])
    # p = (5 - 1) / 8 * 3 + 1 = 2.5
    assert adversary_power(eta, pi, 5, "round").tolist() == [3, 5]
    assert adversary_power(eta, pi, 5, "ceil").tolist() == [3, 5]
    assert adversary_power(eta, pi, 5, "floor").tolist() == [2, 5]


@given(st.lists(st.integers(1, 50), min_size=1, max_size=30),
       st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1)), min_size=30, max_size=30),
       st.integers(1, 9))
def test_p_is_within_one_and_p_max_and_monotone(n, pi, p_max):
    eta = np.array(n, dtype=float)
    pi = np.array(pi[:len(n)])
    p = adversary_power(eta, pi, p_max)
    assert ((p >= 1) & (p <= p_max)).all()
    ratio = np.where(pi > 0, eta / np.where(pi > 0, pi, 1), np.inf)
    order = np.argsort(ratio, kind="stable")
    assert (np.diff(p[order]) >= 0).all()  # linear in eta / pi (section 4)


def test_eta_cap_is_mean_plus_two_sd():
    n = np.array([1] * 9 + [100])
    assert eta_cap(n) == pytest.approx(10.9 + 2 * 29.7)
    assert eta_cap(np.array([], dtype=int)) == 0.0
