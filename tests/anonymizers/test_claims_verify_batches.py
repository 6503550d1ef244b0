"""The HHP verifier run over batches of whole members reports what the
whole-table verifier reports, however the input and the release are cut."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.verify.claims import verify_hhp, verify_release_batches
from tests.anonymizers.test_claims_verify import claims


@pytest.fixture(scope="module")
def case():
    data = claims(seed=3, n=40)
    node = {"dx": "pcg", "procedure": "cpt_group", "length_of_stay": "table4",
            "dsfc": "months", "age": "table3", "sex": "value", "claims_per_member": "five"}
    res = hhp_release(data, HHPConfig(seed=4, node=node, max_sup=1.0, sample_size=200,
                                      ci_halfwidth=0.05))
    return data, res


def _other_label(value, a, b):
    return a if value != a else b


def _broken(data, res) -> dict:
    """Releases and inputs the verifier must reject, by what is wrong."""
    who = res.members["member_id"].iloc[0]
    screened = data.loc[data["dx_code"] == "3051", "member_id"].iloc[0]
    key = res.key.copy()
    key.loc[0, "source_member_id"] = screened
    over = pd.concat([res.claims[res.claims["member_id"] == who]] * 30, ignore_index=True)
    wrong_claim, wrong_member, dated, ids = (res.claims.copy(), res.members.copy(),
                                             res.claims.copy(), res.members.copy())
    wrong_claim.loc[0, "dx"] = _other_label(wrong_claim.loc[0, "dx"], "AMI", "UTI")
    wrong_member.loc[3, "age"] = _other_label(wrong_member.loc[3, "age"], "10-19", "20-29")
    dated["dsfc"] = dated["dsfc"].astype(object)
    dated.loc[2, "dsfc"] = "2009-03-01"
    ids.loc[1, "sex"] = data["claim_id"].iloc[-1]
    return {
        "valid": (data, res),
        "truncation": (data, replace(res, claims=pd.concat([res.claims, over],
                                                           ignore_index=True))),
        "threshold": (data, replace(res, metrics=dict(res.metrics, truncation=dict(
            res.metrics["truncation"], threshold=10_000)))),
        "screened member in the key": (data, replace(res, key=key)),
        "label on the wrong claim": (data, replace(res, claims=wrong_claim)),
        "label on the wrong member": (data, replace(res, members=wrong_member)),
        "date": (data, replace(res, claims=dated)),
        "source id": (data, replace(res, members=ids)),
        "member dropped": (data, replace(res, members=res.members.iloc[1:],
                                         claims=res.claims[res.claims["member_id"] != who],
                                         key=res.key[res.key["member_id"] != who])),
        "released member not in the input": (
            data[data["member_id"] != res.key["source_member_id"].iloc[0]], res),
    }


class Chunked:
    """Released claims read in chunks of ``size`` rows, as from a file."""

    def __init__(self, claims: pd.DataFrame, size: int):
        self.claims, self.size = claims.reset_index(drop=True), size

    def chunks(self):
        return [self.claims.iloc[i:i + self.size] for i in range(0, len(self.claims), self.size)]

    def of(self, pseudonyms):
        return self.claims[self.claims["member_id"].isin(set(pseudonyms))]


def _batched(data, res, cuts, size):
    ids = sorted(data["member_id"].unique())
    bounds = [0, *sorted(cuts), len(ids)]

    def batches():  # whole members per batch, some batches empty
        return [data[data["member_id"].isin(ids[a:b])] for a, b in zip(bounds, bounds[1:])]

    return verify_release_batches(res.members, Chunked(res.claims, size), res.metrics, res.key,
                                  batches)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 40), max_size=5), st.integers(1, 400))
def test_batched_verifier_reports_what_the_whole_one_does(case, cuts, size):
    for what, (data, res) in _broken(*case).items():
        whole = verify_hhp(res, data)
        split = _batched(data, res, cuts, size)
        assert whole.ok == (what == "valid"), (what, whole.violations)
        assert (split.ok, sorted(split.violations), split.checked) == \
            (whole.ok, sorted(whole.violations), whole.checked), what


def test_a_member_split_over_batches_is_reported(case):
    data, res = case
    verdict = verify_release_batches(res.members, Chunked(res.claims, 50), res.metrics, res.key,
                                     lambda: [data.iloc[::2], data.iloc[1::2]])
    assert not verdict.ok
    assert any("two batches" in v for v in verdict.violations), verdict.violations


def test_examples_do_not_depend_on_row_order(case):
    data, res = case
    bad = res.claims.copy()
    bad.loc[:, "dx"] = "AMI"
    shuffled = bad.sample(frac=1, random_state=np.random.default_rng(1))
    one = verify_hhp(replace(res, claims=bad), data)
    other = verify_hhp(replace(res, claims=shuffled), data.iloc[::-1])
    assert not one.ok and sorted(one.violations) == sorted(other.violations)
