"""The HHP release's claims reach the load a chunk at a time, with the rows
the whole-table transformation gives (issue #7: bounded memory)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from deid.methods import hhp


@pytest.mark.parametrize("rows", [1, 7, 64, 10_000])
def test_streamed_long_claims_are_the_whole_table_rows(tmp_path, rows):
    rng = np.random.default_rng(rows)
    n = 50
    claims = pd.DataFrame({"member_id": rng.choice(["m1", "m\u20282", "", "m,3", "m4"], n),
                           "dsfc": rng.choice(["0-1 month", "2-3 months", None], n),
                           "pcg": rng.choice(["ARTHSPIN", "*"], n)})
    path = tmp_path / "claims.parquet"
    claims.to_parquet(path, index=False, row_group_size=9)
    numbers = claims.groupby("member_id").cumcount().to_numpy(dtype=np.int32)
    source = hhp.LongClaims(path, numbers)
    streamed = pd.concat(list(source.chunks(rows)), ignore_index=True)
    whole = claims.astype(str)
    whole.insert(1, "claim_number", whole.groupby("member_id").cumcount())
    whole = hhp._melt(whole)  # the whole table at once
    assert len(source) == len(whole) == 2 * n and list(streamed.columns) == source.columns
    key = ["member_pseudonym", "claim_number", "attribute", "value"]
    pd.testing.assert_frame_equal(streamed.sort_values(key, ignore_index=True),
                                  whole.sort_values(key, ignore_index=True), check_dtype=False)


def test_claim_numbers_must_match_the_claims(tmp_path):
    path = tmp_path / "claims.parquet"
    pd.DataFrame({"member_id": ["a", "b"], "pcg": ["x", "y"]}).to_parquet(path)
    with pytest.raises(ValueError, match="claim numbers"):
        hhp.LongClaims(path, np.zeros(3, dtype=np.int32))
