"""Marketer risk, equation (2) (El Emam et al. 2012, appendix section 6),
against a brute-force expectation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.claims.marketer import marketer_risk, scaled_population
from anonymizers.errors import ParameterError


def brute_force(sizes, n) -> float:
    """Mean over every n-subset of the population of (classes present) / N."""
    labels = [j for j, f in enumerate(sizes) for _ in range(f)]
    N = len(labels)
    total = count = 0
    for subset in itertools.combinations(range(N), n):
        total += len({labels[i] for i in subset})
        count += 1
    return total / count / N


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_equation_2_is_the_expected_number_of_sampled_classes(sizes, data):
    n = data.draw(st.integers(0, sum(sizes)))
    assert marketer_risk(sizes, n) == pytest.approx(brute_force(sizes, n), abs=1e-12)


def test_small_example_by_hand():
    # F = (1, 2), N = 3, n = 1: P(f_1 = 0) = 2/3, P(f_2 = 0) = 1/3;
    # theta = (1/3) (1/3 + 2/3) = 1/3
    assert marketer_risk([1, 2], 1) == pytest.approx(1 / 3)


def test_whole_population_is_classes_over_records():
    assert marketer_risk([5, 1, 1, 3]) == pytest.approx(4 / 10)


def test_large_population_is_stable():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 3000, size=500)
    N, n = int(sizes.sum()), 10_000
    exact = sum(1 - Fraction(math.comb(N - int(f), n), math.comb(N, n)) for f in sizes[:3])
    got_first3 = marketer_risk(sizes[:3], None)  # sanity: runs without n
    assert 0 < got_first3 <= 1
    got = marketer_risk(sizes, n)
    assert np.isfinite(got) and 0 < got <= len(sizes) / N
    # the first three classes' terms, exactly with big integers, against log space
    part = marketer_risk(np.r_[sizes[:3], [N - int(sizes[:3].sum())]], n) * N
    last = 1 - Fraction(math.comb(int(sizes[:3].sum()), n), math.comb(N, n))
    assert part == pytest.approx(float(exact + last), rel=1e-9)


def test_bad_arguments():
    with pytest.raises(ParameterError):
        marketer_risk([1, 2], 4)
    with pytest.raises(ParameterError):
        marketer_risk([-1, 2])
    assert marketer_risk([]) == 0.0


def test_scaled_population():
    assert scaled_population([1, 3], 8).tolist() == [2, 6]
    with pytest.raises(ParameterError):
        scaled_population([1, 3], 3)
