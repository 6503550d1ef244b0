"""GCCens over successive releases (issue 25): the union of a patient's
records can leave k-map though each record keeps it; the union-safe release
keeps the union k-mapped and each release's own guarantee."""

from __future__ import annotations

import pandas as pd
import pytest

from anonymizers.censoring import GCCensConfig
from anonymizers.successive import gccens as gcc
from anonymizers.successive.check import breaches, check
from anonymizers.successive.harness import overlapping_cohorts, random_pool
from anonymizers.verify.censoring import records_from_document, verify_gccens

K = 3


def multiset_pool(seed: int) -> pd.DataFrame:
    pool = random_pool(400, 25, seed=seed, max_codes=4)
    return pd.concat([pool, pool.sample(frac=0.6, random_state=seed),
                      pool.sample(frac=0.3, random_state=seed + 1)], ignore_index=True)


@pytest.fixture(scope="module")
def runs():
    pool = multiset_pool(7)
    cohorts = overlapping_cohorts(pool, 150, 120, seed=2, gain=0.5)
    config = GCCensConfig(k=K, caps=None, seed=1)
    first = gcc.release(cohorts.first, pool, config)
    plain = gcc.release(cohorts.second, pool, config, first, union_safe=False)
    safe = gcc.release(cohorts.second, pool, config, first)
    return pool, cohorts, first, plain, safe


def table(records: dict) -> pd.DataFrame:
    return pd.DataFrame([(p, c) for p, codes in records.items() for c, n in codes.items()
                         for _ in range(n)], columns=["patient_id", "code"])


def test_worked_example_union_leaves_k_map_and_the_defence_keeps_it():
    """x holds A twice; by the second run it also holds B twice.  Run 1
    releases x as {A, A}, run 2 (censoring A away) as {B, B}: each is in two
    population records, their union {A, A, B, B} in x's alone."""
    pop = table({"x": {"A": 2, "B": 2}, "y": {"A": 2}, "z": {"B": 2},
                 "w": {"A": 1, "B": 1}, "v": {"A": 1, "B": 1}})
    s1 = table({"x": {"A": 2}, "y": {"A": 2}})
    s2 = table({"x": {"A": 2, "B": 2}, "z": {"B": 2}, "w": {"A": 1, "B": 1}})
    config = GCCensConfig(k=2, caps=None, seed=1)
    first = gcc.release(s1, pop, config)
    plain = gcc.release(s2, pop, config, first, union_safe=False)
    report = gcc.attack([first.release, plain.release], [first.key, plain.key], population=pop)
    assert report["targets_breached"] == 1 and report["breaches"][0]["candidates"] == 1
    assert not check("gccens", [first.tables()], plain.tables(pop), {"k": 2}).ok
    safe = gcc.release(s2, pop, config, first)
    assert safe.narrowed == 1
    assert check("gccens", [first.tables()], safe.tables(pop), {"k": 2}).ok
    patients, records, _, caps = records_from_document(safe.release)
    assert verify_gccens(patients, records, safe.key, s2, pop, 2, caps).ok


def test_attack_and_check_agree_on_generated_cohorts(runs):
    pool, _, first, plain, _ = runs
    report = gcc.attack([first.release, plain.release], [first.key, plain.key], population=pool)
    found = breaches("gccens", [first.tables()], plain.tables(pool), {"k": K})
    assert len(found) == report["targets_breached"]


def test_union_safe_release_keeps_both_guarantees(runs):
    pool, cohorts, first, _, safe = runs
    verdict = check("gccens", [first.tables()], safe.tables(pool), {"k": K})
    assert verdict.ok, verdict.violations
    assert not gcc.attack([first.release, safe.release], [first.key, safe.key],
                          population=pool)["breached"]
    patients, records, _, caps = records_from_document(safe.release)
    assert verify_gccens(patients, records, safe.key, cohorts.second, pool, K, caps).ok


def test_population_dis_counts_containment():
    pop = pd.DataFrame({"patient_id": ["a", "a", "b", "c"], "code": ["1", "1", "1", "2"]})
    p = gcc.Population(pop)
    assert p.dis({"1": 1}) == 2 and p.dis({"1": 2}) == 1 and p.dis({}) == 3
    assert p.dis({"9": 1}) == 0
