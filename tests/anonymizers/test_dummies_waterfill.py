"""MedCo dummy generation (Zoveralli, section 3): pouring, slots, repair, generation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.dummies import DummyConfig, DummyGenerationError, generate_dummies
from anonymizers.dummies.batch import Batch
from anonymizers.dummies.generate import _fitting_prefix
from anonymizers.dummies.waterfill import (dedupe_by_swaps, feasible_pour, fill_slots,
                                           repeated_slots, water_levels)
from anonymizers.errors import InputError, ParameterError
from anonymizers.verify.dummies import verify_dummies


def long(sets) -> pd.DataFrame:
    rows = [(f"p{i}", c) for i, s in enumerate(sets) for c in s]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def released_sets(result) -> dict:
    return result.released.groupby("patient_id")["code"].agg(frozenset).to_dict()


@given(st.lists(st.integers(0, 30), min_size=1, max_size=12), st.integers(1, 8), st.data())
def test_water_levels_pours_lowest_first(freq, cap, data):
    freq = np.array(freq)
    slots = data.draw(st.integers(0, cap * len(freq)))
    add = water_levels(freq, slots, cap, np.random.default_rng(0))
    level = freq + add
    assert add.sum() == slots and (add >= 0).all() and (add <= cap).all()
    open_ = add < cap  # codes that could still take more
    if add.any() and open_.any():
        # nothing open sits more than 1 below a code that received occurrences
        assert level[add > 0].max() <= level[open_].min() + 1


def test_water_levels_by_hand():
    add = water_levels(np.array([5, 1, 3]), 4, 10, np.random.default_rng(0))
    assert add.tolist() == [0, 3, 1]  # 1 -> 4 and 3 -> 4
    assert water_levels(np.array([5, 1, 3]), 4, 2, np.random.default_rng(0)).tolist() == [0, 2, 2]


@given(st.lists(st.integers(0, 20), min_size=2, max_size=15), st.data())
def test_fill_slots_gives_each_dummy_distinct_codes(freq, data):
    freq = np.array(freq)
    sizes = np.array(data.draw(st.lists(st.integers(1, len(freq)), min_size=1, max_size=20)))
    codes, replaced = fill_slots(freq, sizes, np.random.default_rng(data.draw(st.integers(0, 99))))
    owner = np.repeat(np.arange(len(sizes)), sizes)
    assert len(codes) == sizes.sum()
    assert len(repeated_slots(owner, codes, len(freq))) == 0
    if replaced == 0:
        expect = water_levels(freq, int(sizes.sum()), len(sizes), np.random.default_rng(0))
        assert np.bincount(codes, minlength=len(freq)).sum() == expect.sum()


def gale_ryser(add: np.ndarray, sizes: np.ndarray) -> bool:
    """Dummies of ``sizes`` with distinct codes can take the counts ``add``."""
    top = np.cumsum(np.sort(add)[::-1])
    bound = [np.minimum(sizes, t).sum() for t in range(1, len(add) + 1)]
    return bool((top <= bound).all())


def test_pour_stays_realisable_for_a_big_dummy():
    # 5 deep codes, 100 shallow ones; one dummy of 30 codes and 500 of one.
    # Lowest first would pour all 530 slots on the 5 deep codes, which the
    # 30-code dummy cannot take without repeats; the cap is lowered instead.
    freq = np.array([0] * 5 + [1000] * 100)
    sizes = np.array([30] + [1] * 500)
    naive = water_levels(freq, 530, 501, None)
    assert not gale_ryser(naive, sizes)
    add = feasible_pour(freq, sizes, np.random.default_rng(0))
    assert add.sum() == 530 and gale_ryser(add, sizes)
    assert add[:5].min() >= 100  # still lowest first as far as it can
    codes, replaced = fill_slots(freq, sizes, np.random.default_rng(1))
    assert replaced == 0
    assert len(repeated_slots(np.repeat(np.arange(len(sizes)), sizes), codes, len(freq))) == 0


def test_dedupe_handles_several_repeats_in_one_dummy():
    owner = np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 3])
    codes = np.array([1, 1, 2, 2, 3, 4, 5, 6, 7, 8])
    before = Counter(codes.tolist())
    assert dedupe_by_swaps(owner, codes, 9, np.random.default_rng(0), 50)
    assert Counter(codes.tolist()) == before
    assert len(repeated_slots(owner, codes, 9)) == 0


def test_fitting_prefix_never_passes_the_top():
    # deficits 3, 1, 0: i dummies fit min(i,3) + min(i,1) slots
    deficit = np.array([3, 1, 0])
    assert _fitting_prefix(np.array([2, 1, 1, 1]), deficit) == 3  # 2,3,4 <= 2,3,4 ; 5 > 4
    assert _fitting_prefix(np.array([1, 1]), deficit) == 2


def test_equal_sets_hash_equal():
    keys = np.random.default_rng(0).integers(0, 2 ** 63, size=10, dtype=np.uint64)
    batch = Batch(np.array([0, 1]), np.array([0, 3, 6]), np.array([4, 1, 7, 7, 4, 1]))
    h = batch.hashes(keys)
    assert h[0] == h[1]


def test_small_release_is_flat_and_keeps_reals():
    sets = [{"a"}, {"a", "b"}, {"a", "c"}, {"a", "b", "c"}, {"d"}, {"a", "d"}]
    df = long(sets)
    clusters = [["a", "b", "c", "d"]]
    result = generate_dummies(df, clusters, DummyConfig(seed=3))
    assert verify_dummies(df, result.released, result.dummy_map, clusters).ok
    shown = released_sets(result)
    counts = Counter(c for s in shown.values() for c in s)
    assert max(counts.values()) - min(counts.values()) <= 1
    m = result.dummy_map
    reals = m[~m["is_dummy"]]
    assert sorted(reals["source_patient_id"]) == sorted(df["patient_id"].unique())
    for _, row in reals.iterrows():
        assert shown[row["pseudonym"]] == frozenset(sets[int(row["source_patient_id"][1:])])


def test_metrics_match_the_release():
    rng = np.random.default_rng(5)
    sets = [set(rng.choice(30, size=rng.integers(1, 6), replace=False).astype(str).tolist())
            for _ in range(200)]
    df = long(sets)
    clusters = [[str(i) for i in range(15)], [str(i) for i in range(15, 30)]]
    clusters = [[c for c in cl if c in set(df["code"])] for cl in clusters]
    result = generate_dummies(df, clusters, DummyConfig(seed=1))
    m = result.metrics
    n_real = df["patient_id"].nunique()
    n_all = result.released["patient_id"].nunique()
    assert (m["n_real_patients"], m["n_released_patients"]) == (n_real, n_all)
    assert m["n_dummies"] == int(result.dummy_map["is_dummy"].sum()) == n_all - n_real
    assert m["real_ratio"] == pytest.approx(len(result.released) / len(df.drop_duplicates()))
    assert m["released_over_real_patients"] == pytest.approx(n_all / n_real)
    support = df.drop_duplicates()["code"].value_counts()
    theo = sum(len(cl) * support[cl].max() for cl in clusters) / support.sum()
    assert m["theoretical_ratio"] == pytest.approx(theo)
    assert m["flat"] and m["real_ratio"] >= m["theoretical_ratio"] - 1e-9
    with_dummy = result.dummy_map[result.dummy_map["is_dummy"]]["source_patient_id"].nunique()
    assert m["real_patients_without_dummy"] <= n_real - with_dummy


def test_same_seed_same_release_other_seed_other_release():
    rng = np.random.default_rng(8)
    df = long([set(rng.choice(list("abcdefgh"), size=rng.integers(1, 5), replace=False))
               for _ in range(60)])
    clusters = [list("abcdefgh")]
    one = generate_dummies(df, clusters, DummyConfig(seed=9))
    two = generate_dummies(df, clusters, DummyConfig(seed=9))
    other = generate_dummies(df, clusters, DummyConfig(seed=10))
    pd.testing.assert_frame_equal(one.released, two.released)
    pd.testing.assert_frame_equal(one.dummy_map, two.dummy_map)
    assert not one.dummy_map.equals(other.dummy_map)


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_fill_orders_both_flatten(order):
    rng = np.random.default_rng(2)
    sets = [set(rng.zipf(1.6, size=rng.integers(1, 5)).astype(str).tolist()) for _ in range(150)]
    df = long(sets)
    codes = sorted(set(df["code"]), key=lambda c: (df["code"] == c).sum())
    clusters = [codes[: len(codes) // 2], codes[len(codes) // 2:]]
    result = generate_dummies(df, clusters, DummyConfig(seed=4, fill_order=order))
    assert verify_dummies(df, result.released, result.dummy_map, clusters).ok


@pytest.mark.parametrize("seed", [0, 9])
def test_one_code_patients_get_no_dummy_when_every_one_code_set_exists(seed):
    # every set of one code already exists, so no one-code patient can be
    # duplicated; the three-code patients carry the whole filling.
    sets = [{"a"}] * 5 + [{"b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"a", "b", "c"}, {"d", "e", "f"}]
    df = long(sets)
    clusters = [list("abcdef")]
    result = generate_dummies(df, clusters, DummyConfig(seed=seed))
    assert verify_dummies(df, result.released, result.dummy_map, clusters).ok
    assert result.metrics["real_patients_without_dummy"] == 10
    sizes = result.released.groupby("patient_id").size()
    dummies = result.dummy_map[result.dummy_map["is_dummy"]]["pseudonym"]
    assert len(dummies) >= 6 and (sizes[dummies] == 3).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_collisions_are_repaired_and_accounted_for(seed):
    rng = np.random.default_rng(0)
    codes = list("abcdefghijklmnop")
    sets = [set(rng.choice(codes, size=rng.integers(1, 5), replace=False)) for _ in range(150)]
    df = long(sets + [{"a", "b"}] * 30)
    result = generate_dummies(df, [codes], DummyConfig(seed=seed))
    assert verify_dummies(df, result.released, result.dummy_map, [codes]).ok
    m = result.metrics
    assert m["collisions_detected"] > 0
    fixed = m["repaired_by_reshuffle"] + m["repaired_by_substitution"] + m["repaired_by_search"]
    dropped = m["dropped_profile_full"] + m["dropped_unrepaired"]
    assert m["collisions_detected"] == fixed + dropped


def test_exhausted_profiles_raise_with_the_cluster():
    # {a} x3 and {b}: b needs a second occurrence, but the only sets of one
    # code, {a} and {b}, are taken (pigeonhole).
    df = long([{"a"}] * 3 + [{"b"}])
    with pytest.raises(DummyGenerationError) as err:
        generate_dummies(df, [["a", "b"]], DummyConfig(seed=0))
    assert err.value.reason == "exhausted" and err.value.cluster == ["a", "b"]
    assert err.value.partial_dummies == []


def test_cluster_codes_absent_from_the_data_are_filled_from_zero():
    df = long([{"a"}, {"a", "b"}, {"b", "c"}, {"c"}])
    clusters = [["a", "b", "c", "z"]]
    result = generate_dummies(df, clusters, DummyConfig(seed=0))
    assert verify_dummies(df, result.released, result.dummy_map, clusters).ok
    assert (result.released["code"] == "z").sum() >= 1


@pytest.mark.parametrize("clusters, message", [
    ([["a"]], "in no cluster"),
    ([["a", "b"], ["b"]], "exactly one cluster"),
    ([["a", 1, "b"]], "not a string"),
    ("a,b", "list of clusters"),
    ([[]], "non-empty"),
])
def test_bad_clusters(clusters, message):
    with pytest.raises(InputError, match=message):
        generate_dummies(long([{"a", "b"}]), clusters, DummyConfig(seed=0))


@pytest.mark.parametrize("kwargs, field", [
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"seed": 0, "fill_order": "random"}, "fill_order"),
    ({"seed": 0, "max_rounds": 0}, "max_rounds"),
    ({"seed": 0, "repair_passes": 0}, "repair_passes"),
])
def test_bad_parameters(kwargs, field):
    with pytest.raises(ParameterError) as err:
        DummyConfig(**kwargs)
    assert err.value.field == field


def test_empty_input_is_an_error():
    with pytest.raises(InputError, match="no rows"):
        generate_dummies(pd.DataFrame({"patient_id": [], "code": []}), [["a"]], DummyConfig(seed=0))
