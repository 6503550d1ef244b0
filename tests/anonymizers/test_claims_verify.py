"""The HHP verifier catches broken releases (it must not be a no-op)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.verify.claims import verify_hhp


def claims(seed=0, n=50) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n):
        age, sex = int(rng.integers(20, 90)), str(rng.integers(1, 3))
        for c in range(int(rng.integers(1, 15))):
            rows.append({"member_id": f"P{m:03d}", "claim_id": f"K{m:03d}-{c}",
                         "service_date": f"2009{rng.integers(1, 13):02d}{rng.integers(1, 29):02d}",
                         "age_at_service": age, "sex": sex,
                         "dx_code": str(rng.choice(["4019", "25000", "4280", "5990", "3051"],
                                                   p=[.4, .3, .15, .14, .01])),
                         "procedure_code": str(rng.choice(["99213", "80053", "J1100", ""])),
                         "length_of_stay": int(rng.choice([0, 0, 2]))})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def case():
    data = claims()
    node = {"dx": "pcg", "procedure": "cpt_group", "length_of_stay": "table4",
            "dsfc": "months", "age": "table3", "sex": "value",
            "claims_per_member": "five"}
    res = hhp_release(data, HHPConfig(seed=4, node=node, max_sup=1.0, sample_size=200,
                                      ci_halfwidth=0.05))
    assert verify_hhp(res, data).ok
    return data, res


def fails(data, res, text: str):
    verdict = verify_hhp(res, data)
    assert not verdict.ok
    assert any(text in v for v in verdict.violations), verdict.violations


def test_extra_claim_beyond_truncation(case):
    data, res = case
    t = res.metrics["truncation"]["threshold"]
    who = res.claims["member_id"].value_counts().index[0]
    mine = res.claims[res.claims["member_id"] == who]
    extra = pd.concat([mine] * (t // len(mine) + 1)).head(t + 1 - len(mine))
    fails(data, replace(res, claims=pd.concat([res.claims, extra], ignore_index=True)),
          f"more than {t} claims")


def test_wrong_threshold_in_metrics(case):
    data, res = case
    m = dict(res.metrics, truncation=dict(res.metrics["truncation"], threshold=10_000))
    fails(data, replace(res, metrics=m), "truncation threshold should be")


def test_removed_member_in_the_key(case):
    data, res = case
    screened = data.loc[data["dx_code"] == "3051", "member_id"].iloc[0]
    key = res.key.copy()
    key.loc[0, "source_member_id"] = screened
    fails(data, replace(res, key=key), "should have been removed")


def test_date_in_the_release(case):
    data, res = case
    bad = res.claims.copy()
    bad["dsfc"] = bad["dsfc"].astype(object)
    bad.loc[0, "dsfc"] = "2009-03-01"
    fails(data, replace(res, claims=bad), "date-like")
    fails(data, replace(res, claims=res.claims.assign(
        dsfc=pd.Timestamp("2009-01-01"))), "date column")


def test_source_id_in_the_release(case):
    data, res = case
    bad = res.members.copy()
    bad.loc[0, "sex"] = data["member_id"].iloc[0]
    fails(data, replace(res, members=bad), "source ids")
    bad = res.claims.copy()
    bad.loc[1, "dx"] = data["claim_id"].iloc[3]
    fails(data, replace(res, claims=bad), "source ids")


def test_label_of_another_level(case):
    data, res = case
    bad = res.members.copy()
    bad.loc[0, "age"] = "0-4"  # a five_years label; the chosen level is table3
    fails(data, replace(res, members=bad), "not labels of level 'table3'")


def test_valid_label_on_the_wrong_claim(case):
    data, res = case
    bad = res.claims.copy()
    bad.loc[0, "dx"] = "AMI" if bad.loc[0, "dx"] != "AMI" else "UTI"
    fails(data, replace(res, claims=bad), "released more often")


def test_valid_label_on_the_wrong_member(case):
    data, res = case
    bad = res.members.copy()
    bad.loc[0, "age"] = "10-19" if bad.loc[0, "age"] != "10-19" else "20-29"
    fails(data, replace(res, members=bad), "the chosen level gives")


def test_dropped_member_and_broken_key(case):
    data, res = case
    who = res.members["member_id"].iloc[0]
    fails(data, replace(res, members=res.members.iloc[1:]), "not in the members table")
    fails(data, replace(res, key=res.key[res.key["member_id"] != who]), "exactly once")
    both = replace(res, members=res.members.iloc[1:],
                   claims=res.claims[res.claims["member_id"] != who],
                   key=res.key[res.key["member_id"] != who])
    fails(data, both, "not released")


def test_duplicate_pseudonym_and_extra_column(case):
    data, res = case
    fails(data, replace(res, members=pd.concat([res.members, res.members.head(1)])),
          "appears twice")
    fails(data, replace(res, claims=res.claims.assign(claim_id="x")), "not quasi-identifiers")


def test_policy_version_must_match(case):
    data, res = case
    fails(data, replace(res, metrics=dict(res.metrics, policy_version="other")), "policy")
