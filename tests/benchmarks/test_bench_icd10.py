"""bench_icd10's measuring helpers: the least MedCo ratio over clusterings
(checked against every partition of small data) and W1 carried through a map."""

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.dummies.bounds import any_profile_bound
from benchmarks.bench_icd10 import carried, least_ratio


def _data(freq) -> pd.DataFrame:
    return pd.DataFrame([(p, f"c{c}") for c, f in enumerate(freq) for p in range(f)],
                        columns=["patient_id", "code"])


def _least_over_partitions(freq, a, n_clusters) -> float:
    """Fewest added occurrences (docs/methods/medco.md#dummies-bounds) of any partition."""
    freq, best = np.asarray(freq), np.inf
    for labels in itertools.product(range(n_clusters), repeat=len(freq)):
        labels = np.unique(labels, return_inverse=True)[1].ravel()
        if np.bincount(labels).min() >= a:
            best = min(best, any_profile_bound(freq, labels))
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=7), st.integers(1, 3),
       st.integers(1, 3))
def test_least_ratio_is_below_every_partition(freq, a, n_clusters):
    if len(freq) < a:
        return
    bound, clusters = least_ratio(_data(freq), a, n_clusters)
    assert bound <= _least_over_partitions(freq, a, n_clusters) + 1e-12
    # the clusters it returns are a valid clustering at these settings
    assert sorted(c for cl in clusters for c in cl) == sorted(f"c{i}" for i in range(len(freq)))
    assert len(clusters) <= n_clusters and min(map(len, clusters)) >= a


def test_least_ratio_splits_by_frequency():
    # two codes of 10 patients, two of 1: apart nothing to add; together the
    # two 1s need 8 each (16), which the bound relaxes to 4 * 9 - 22 = 14
    bound, clusters = least_ratio(_data([10, 1, 10, 1]), 2, 2)
    assert bound == 1.0 and sorted(clusters) == [["c0", "c2"], ["c1", "c3"]]
    assert least_ratio(_data([10, 1, 10, 1]), 2, 1)[0] == np.floor((1 + 14 / 22) * 1e4) / 1e4


def test_carried_merges_codes_the_map_merges():
    mapping = {"401": "I10", "402": "I11", "405": "I10", "250": "E10"}
    assert carried([("401",), ("250", "401"), ("401", "405")], mapping) == [
        ("I10",), ("E10", "I10"), ("I10",)]
