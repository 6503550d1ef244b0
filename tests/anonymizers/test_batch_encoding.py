"""Records and HORPART plans built from row batches of the long table are
the ones built from the whole table, for any split of the rows (issue #7:
a task holds one row group plus the encoded records)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_disassociation_properties import cases, long

from anonymizers.disassociation import DisassociationConfig, TooFewRecords
from anonymizers.disassociation.batches import plan, plan_batches
from anonymizers.errors import InputError, ParameterError
from anonymizers.records import BatchEncoder, encode

CODES = ["250.01", "401.9", "V45.81", "E849.0", "a#1", "", "ü", "1", "10", "01"]
long_rows = st.lists(st.tuples(st.sampled_from(["p1", "p2", "10", "1", "p#3", "é"]),
                               st.sampled_from(CODES)), max_size=40)


def split(df: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    """``df`` in order, cut anywhere (a patient's rows may fall in several batches)."""
    bounds = [0, *sorted(cuts), len(df)]
    return [df.iloc[a:b] for a, b in zip(bounds, bounds[1:])]


@given(long_rows, st.lists(st.integers(0, 40), max_size=5), st.sampled_from([object, "str"]))
def test_batch_encoder_gives_what_encode_gives(rows, cuts, dtype):
    df = pd.DataFrame(rows, columns=["patient_id", "code"], dtype=dtype)
    whole = encode(df)
    encoder = BatchEncoder()
    for part in split(df, [min(c, len(df)) for c in cuts]):
        encoder.add(part["patient_id"], part["code"])
    records, col = encoder.finish()
    assert records.patients.tolist() == whole.patients.tolist()
    assert records.codes.tolist() == whole.codes.tolist()
    assert (records.matrix != whole.matrix).nnz == 0
    assert records.codes[col].tolist() == df["code"].astype(str).tolist()


def test_batch_encoder_with_no_batch_is_empty():
    records, col = BatchEncoder().finish()
    assert records.matrix.shape == (0, 0) and len(col) == 0


@given(cases(), st.randoms(use_true_random=False), st.lists(st.integers(0, 200), max_size=5))
def test_any_split_of_the_rows_gives_the_same_plan(case, rnd, cuts):
    sets, cfg = case
    data = long(sets)
    order = list(range(len(data)))
    rnd.shuffle(order)  # patients interleaved, as claims are
    data = data.iloc[order].reset_index(drop=True)
    if len(sets) < cfg.k:  # no release keeps the guarantee: both refuse, neither is empty
        with pytest.raises(TooFewRecords):
            plan(data, cfg)
        with pytest.raises(TooFewRecords):
            plan_batches(split(data, [min(c, len(data)) for c in cuts]), cfg)
        return
    whole = plan(data, cfg)
    batched = plan_batches(split(data, [min(c, len(data)) for c in cuts]), cfg)
    pd.testing.assert_frame_equal(batched.rows, whole.rows)
    assert batched.n_clusters == whole.n_clusters and batched.metrics == whole.metrics
    assert np.array_equal(batched.codes, whole.codes) if whole.codes is not None \
        else batched.codes is None


def test_plan_batches_names_the_row_of_an_empty_value():
    data = pd.DataFrame({"patient_id": ["a", "b", "c", "d"], "code": ["1", "2", None, "4"]})
    with pytest.raises(InputError, match="claims.parquet.*row 3, field 'code'"):
        plan_batches([data.iloc[:2], data.iloc[2:]], DisassociationConfig(2, 2),
                     source="claims.parquet")
    data.loc[2, "code"] = ""
    with pytest.raises(InputError, match="row 3, field 'code'"):
        plan_batches([data.iloc[:2], data.iloc[2:]], DisassociationConfig(2, 2))


def test_plan_batches_refuses_repeated_codes():
    data = pd.DataFrame({"patient_id": ["a", "a"], "code": ["1", "1"]})
    with pytest.raises(ParameterError, match="repeated_codes"):
        plan_batches([data], DisassociationConfig(2, 2, repeated_codes=True))
