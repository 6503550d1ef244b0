"""W1's chains drawn without enumerating every frequent set
(``batch_utility.w1_chains``) are the chains drawn from the enumeration
(``metrics.w1_chains`` over ``frequent_sets``, the FP-Growth-checked
reference), and stay cheap on records so dense that the enumeration is not."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from test_disassociation_batches import synthetic

from anonymizers.disassociation import metrics as dm
from anonymizers.disassociation.batch_utility import frequent_sets, w1_chains


def _parts(data: pd.DataFrame, per: int) -> list[pd.DataFrame]:
    ids = data["patient_id"].unique()
    return [data[data["patient_id"].isin(ids[lo:lo + per])] for lo in range(0, len(ids), per)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.5, 3, 10, 25, 60]), st.integers(1, 40),
       st.integers(1, 5))
def test_lazy_chains_are_the_enumerated_chains(seed, percent, n_chains, max_size):
    data = synthetic(120 + seed % 200, seed % 50)
    parts = _parts(data, 1 + seed % 90)
    expected = dm.w1_chains(frequent_sets(lambda: iter(parts), percent, max_len=max_size),
                            np.random.default_rng(seed), n_chains, max_size)
    got = w1_chains(lambda: iter(parts), percent, np.random.default_rng(seed), n_chains,
                    max_size)
    assert got == expected


def test_int_codes_of_several_widths_duplicates_and_an_empty_batch():
    """Codes as ints of 1-3 digits (read as strings: "9" sorts after "10"),
    repeated (patient, code) rows and an empty batch give the enumeration's
    chains."""
    rng = np.random.default_rng(4)
    rows = pd.DataFrame({"patient_id": rng.integers(0, 80, 900).astype(str),
                         "code": rng.choice([1, 9, 10, 42, 99, 100, 250, 7], 900,
                                            p=[.25, .2, .15, .1, .1, .1, .05, .05])})
    parts = [rows.iloc[:0], *_parts(pd.concat([rows, rows.iloc[:100]]), 25)]
    for seed in range(5):
        expected = dm.w1_chains(frequent_sets(lambda: iter(parts), 5, max_len=4),
                                np.random.default_rng(seed), 30, 4)
        got = w1_chains(lambda: iter(parts), 5, np.random.default_rng(seed), 30, 4)
        assert got == expected and got[4]


def test_no_frequent_code_no_chain_and_no_records_no_chain():
    data = pd.DataFrame({"patient_id": ["a", "b", "c"], "code": ["1", "2", "3"]})
    assert w1_chains(lambda: iter([data]), 50, np.random.default_rng(0)) == {}
    assert w1_chains(lambda: iter([]), 1, np.random.default_rng(0)) == {}


def test_dense_records_give_frequent_chains():
    """3,000 records of 40 codes from 200: over 520,000 sets of up to 4 codes
    are frequent at 0.625 %, which the enumeration would count (it ran for
    hours on the demo warehouse); the chains count a few hundred
    (benchmarks/disassociation.md has the measured time)."""
    rng = np.random.default_rng(1)
    codes = np.array([f"{c:03d}" for c in range(200)])
    rows = [rng.choice(np.r_[rng.choice(60, 30, replace=False),
                             60 + rng.choice(140, 10, replace=False)], 40, replace=False)
            for _ in range(3000)]
    data = pd.DataFrame({"patient_id": np.repeat(np.arange(3000).astype(str), 40),
                         "code": codes[np.concatenate(rows)]})
    chains = w1_chains(lambda: iter(_parts(data, 700)), 0.625, np.random.default_rng(2))
    assert len(chains[4]) > 200  # 250 chains reach 4 codes, nearly all distinct
    held = data.groupby("patient_id")["code"].agg(set)
    for q in chains[4][:20]:
        assert held.map(lambda s, q=set(q): q <= s).mean() >= 0.00625
