"""The HHP method against its independent verifier on random claims tables,
with the edge cases of the developer guide (empty input, one member, k larger
than the data, records of 200+ claims, identical records, unusual codes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.claims import HHPConfig, hhp_release, release_risk
from anonymizers.errors import InputError, ParameterError
from anonymizers.verify.claims import verify_hhp

SCREENED_DX = ["0420", "6349", "E950", "V154", "3051", "302", "317", "V501", "99581"]
DX = ["4019", "25000", "4280", "V5869", "E8889", "-1", "V15.4", "10292", "糖尿病", "", "5990"]
SCREENED_PROC = ["55970", "59100", "89700"]
PROC = ["99213", "80053", "", "G0008", "450", "0001T", "70010"]
SCREENED_POS = ["55", "56", "57"]
POS = ["11", "21", "", "99", "5"]
FAST = {"sample_size": 150, "max_evaluations": 6, "ci_halfwidth": 0.05, "max_iterations": 20}


@st.composite
def claim_tables(draw, max_members=14):
    n_members = draw(st.integers(0, max_members))
    long_member = draw(st.booleans()) and n_members > 0
    rows = []
    for m in range(n_members):
        n_claims = 210 if long_member and m == 0 else draw(st.integers(1, 6))
        age, sex = draw(st.integers(0, 100)), draw(st.sampled_from(["1", "2", "M", "F"]))
        pool_dx = DX + (SCREENED_DX if draw(st.integers(0, 5)) == 0 else [])
        pool_proc = PROC + (SCREENED_PROC if draw(st.integers(0, 6)) == 0 else [])
        pool_pos = POS + (SCREENED_POS if draw(st.integers(0, 6)) == 0 else [])
        seed = draw(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        for c in range(n_claims):
            rows.append({"member_id": f"m{m}", "claim_id": f"c{m}.{c}",
                         "service_date": np.datetime64("2009-06-01") + int(rng.integers(0, 400)),
                         "age_at_service": age, "sex": sex,
                         "dx_code": str(rng.choice(pool_dx)),
                         "procedure_code": str(rng.choice(pool_proc)),
                         "place_of_service": str(rng.choice(pool_pos)),
                         "length_of_stay": int(rng.choice([0, 1, 4, 30]))})
    cols = ["member_id", "claim_id", "service_date", "age_at_service", "sex", "dx_code",
            "procedure_code", "place_of_service", "length_of_stay"]
    return pd.DataFrame(rows, columns=cols)


def expected_removed(df: pd.DataFrame) -> set:
    dx = df["dx_code"].str.replace(".", "", regex=False)
    bad = (dx.isin(SCREENED_DX) | dx.eq("V154") | df["procedure_code"].isin(SCREENED_PROC)
           | df["place_of_service"].isin(SCREENED_POS))
    return set(df.loc[bad, "member_id"])


def nothing_left(df: pd.DataFrame) -> bool:
    """No medical claim of a member screening keeps (the test's own reading)."""
    kept = df[~df["member_id"].isin(expected_removed(df))]
    proc = kept["procedure_code"]
    return not (~(proc.str[:1].str.isalpha().fillna(False) | proc.str.fullmatch(r"\d{3}"))).any()


def release_or_none(df, config):
    try:
        res = hhp_release(df, config)
    except ParameterError as err:  # no node meets MaxSup: nothing may be released
        assert err.field == "max_sup", err
        return None
    except InputError as err:  # screening keeps nothing: refused, never an empty release
        assert "keep no member" in err.problem and nothing_left(df), err
        return None
    assert len(res.members) and len(res.claims) and not nothing_left(df)
    return res


@settings(max_examples=15)
@given(claim_tables(), st.sampled_from([1, 2, 3]), st.sampled_from([0.2, 1.0]),
       st.integers(0, 1000))
def test_release_passes_the_verifier(df, k, max_sup, seed):
    config = HHPConfig(seed=seed, k=k, max_sup=max_sup, **FAST)
    res = release_or_none(df, config)
    if res is None:
        return
    verdict = verify_hhp(res, df)
    assert verdict.ok, verdict.violations
    # the properties again, from the test's own knowledge of the data
    assert not set(res.key["source_member_id"]) & expected_removed(df)
    t = res.metrics["truncation"]["threshold"]
    assert (res.claims["member_id"].value_counts() <= t).all()
    assert res.metrics["risk"] <= max_sup
    kept = df[~df["member_id"].isin(expected_removed(df))]
    proc = kept["procedure_code"]
    medical = ~(proc.str[:1].str.isalpha().fillna(False) | (proc.str.fullmatch(r"\d{3}")))
    assert len(res.claims) <= int(medical.sum())


@settings(max_examples=8)
@given(claim_tables(max_members=10), st.integers(0, 1000))
def test_measured_risk_of_the_release_matches_the_search(df, seed):
    config = HHPConfig(seed=seed, k=2, max_sup=1.0, **FAST)
    res = release_or_none(df, config)
    if res is None:  # max_sup = 1 accepts every node: only input screening empties is refused
        assert nothing_left(df)
        return
    again = release_risk(df, res, config)
    assert again.risk == res.metrics["risk"]
    assert again.iterations == res.metrics["risk_iterations"]


def one_member(n_claims=3) -> pd.DataFrame:
    return pd.DataFrame({"member_id": "only", "claim_id": [f"c{i}" for i in range(n_claims)],
                         "service_date": "20090101", "age_at_service": 40, "sex": "F",
                         "dx_code": "4019", "procedure_code": "99213"})


def test_one_member_with_k_above_the_data_is_not_released():
    with pytest.raises(ParameterError, match="no node meets"):
        hhp_release(one_member(), HHPConfig(seed=1, k=5, **FAST))


def test_one_member_with_k_one_is_released():
    df = one_member()
    res = hhp_release(df, HHPConfig(seed=1, k=1, **FAST))
    assert len(res.members) == 1 and verify_hhp(res, df).ok


def test_identical_records_form_one_class():
    df = pd.concat([one_member(4).assign(member_id=f"twin{i}",
                                         claim_id=[f"t{i}.{c}" for c in range(4)])
                    for i in range(6)], ignore_index=True)
    res = hhp_release(df, HHPConfig(seed=2, k=6, **FAST))
    assert res.metrics["risk"] == 0.0 and verify_hhp(res, df).ok
    # the bottom node is a candidate: six identical members are one class of six
    assert res.metrics["information_loss"] == 0.0


def test_long_records_are_truncated():
    df = pd.concat([one_member(250).assign(member_id="long")]
                   + [one_member(2).assign(member_id=f"s{i}", claim_id=[f"s{i}a", f"s{i}b"])
                      for i in range(30)], ignore_index=True)
    res = hhp_release(df, HHPConfig(seed=3, k=2, max_sup=1.0, **FAST))
    assert res.metrics["truncation"]["threshold"] == 2
    assert res.metrics["truncation"]["claims_truncated"] == 248
    # section 1's figures as shares: 1 of 31 members truncated, 310 - 248 of 310 claims kept
    assert res.metrics["members_truncated_share"] == 1 / 31
    assert res.metrics["claims_kept_share"] == (310 - 248) / 310
    assert verify_hhp(res, df).ok
