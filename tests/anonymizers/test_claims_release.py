"""The HHP release end to end on a small synthetic claims table
(El Emam et al. 2012, appendix), checked by the independent verifier."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonymizers.claims import HHPConfig, hhp_release, release_risk
from anonymizers.errors import InputError, ParameterError
from anonymizers.verify.claims import verify_hhp

FAST = {"sample_size": 300, "max_evaluations": 15, "ci_halfwidth": 0.02}


def synthetic(n_members=60, seed=0, pos=True, specialty=True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    dx = ["4019", "25000", "4280", "V5869", "E8889", "41401", "486", "5990", "78650", "0420"]
    cpt = ["99213", "99214", "80053", "71020", "G0008", "36415", "93000", "", "270"]
    for m in range(n_members):
        age, sex = int(rng.integers(0, 95)), str(rng.integers(1, 3))
        birth = np.datetime64("2008-01-01") - int(age * 365.25)
        start = np.datetime64("2008-01-01") + int(rng.integers(0, 300))
        for c in range(int(rng.integers(1, 25))):
            rows.append({"member_id": f"SRC{m:04d}", "claim_id": f"CLM{m:04d}{c:03d}",
                         "service_date": start + int(rng.integers(0, 700)),
                         "age_at_service": age, "sex": sex, "birth_date": birth,
                         "dx_code": str(rng.choice(dx, p=[.2, .15, .1, .1, .05, .1, .1, .1, .08,
                                                          .02])),
                         "procedure_code": str(rng.choice(cpt)),
                         "place_of_service": str(rng.choice(["11", "21", "22", "23", "81"])),
                         "specialty": str(rng.choice(["08", "11", "06", "30"])),
                         "length_of_stay": int(rng.choice([0, 0, 0, 1, 3, 9]))})
    df = pd.DataFrame(rows)
    return df.drop(columns=[c for c, keep in (("place_of_service", pos),
                                              ("specialty", specialty)) if not keep])


@pytest.fixture(scope="module")
def data():
    return synthetic()


@pytest.fixture(scope="module")
def result(data):
    return hhp_release(data, HHPConfig(seed=11, **FAST))


def test_release_verifies(result, data):
    verdict = verify_hhp(result, data)
    assert verdict.ok, verdict.violations


def test_release_record(result, data):
    m = result.metrics
    assert m["policy_version"] == "hhp-2012-v1" and m["seed"] == 11
    assert m["risk"] <= m["max_sup"] == 0.05
    assert m["nodes_evaluated"] == len(result.lattice) <= 15 * m["lattice_parts"]  # per part
    assert m["lattice_parts"] == 5  # DSFC levels
    assert set(m["chosen_node"]) == set(m["qis_used"])
    assert m["qis_used"] == ["dx", "procedure", "place_of_service", "specialty",
                             "length_of_stay", "dsfc", "age", "sex", "claims_per_member"]
    assert m["released"] == {"members": len(result.members), "claims": len(result.claims)}
    assert m["members_removed_by_screening"] > 0  # the 0420 (HIV) members
    assert 0 < m["marketer_risk"]["theta"] <= 1
    assert all(n.candidate == (n.risk <= 0.05) for n in result.lattice)
    chosen = [n for n in result.lattice if n.levels == m["chosen_node"]]
    assert chosen and chosen[0].information_loss == m["information_loss"]
    assert "comparison" in result.screening_report


def test_release_has_no_dates_or_source_ids(result, data):
    assert list(result.claims.columns) == ["member_id", "dx", "procedure", "place_of_service",
                                           "specialty", "length_of_stay", "dsfc"]
    assert list(result.members.columns) == ["member_id", "age", "sex", "claims_per_member"]
    assert not set(result.members["member_id"]) & set(data["member_id"])
    assert result.key["source_member_id"].isin(data["member_id"]).all()


def test_same_seed_same_release_and_measured_risk(result, data):
    again = hhp_release(data, HHPConfig(seed=11, **FAST))
    pd.testing.assert_frame_equal(again.claims, result.claims)
    pd.testing.assert_frame_equal(again.members, result.members)
    assert release_risk(data, result, HHPConfig(seed=11, **FAST)).risk == result.metrics["risk"]


def test_absent_quasi_identifiers_are_skipped_and_reported():
    data = synthetic(40, seed=2, pos=False, specialty=False)
    res = hhp_release(data, HHPConfig(seed=1, **FAST))
    assert set(res.metrics["qis_absent"]) == {"place_of_service", "specialty"}
    assert "place_of_service" not in res.claims.columns
    assert any("place_of_service" in x for x in res.metrics["screening_not_applied"])
    assert verify_hhp(res, data).ok


def test_a_given_node(data):
    node = {"dx": "pcg", "procedure": "cpt_section", "dsfc": "years"}
    res = hhp_release(data, HHPConfig(seed=3, node=node, max_sup=1.0, **FAST))
    assert res.metrics["chosen_node"]["dx"] == "pcg"
    assert res.metrics["chosen_node"]["age"] == "suppressed"
    assert set(res.claims["dsfc"]) <= {"0-12 months", "12-24 months", "24-36 months", "36+ months"}
    assert set(res.members["age"]) == {"*"}
    assert verify_hhp(res, data).ok
    detailed = {q: lv for q, lv in (("dsfc", "days"), ("age", "years"), ("sex", "value"),
                                    ("claims_per_member", "count"))}
    with pytest.raises(ParameterError, match="not releasable"):
        hhp_release(data, HHPConfig(seed=3, node=detailed, **FAST))
    with pytest.raises(ParameterError, match="levels"):
        hhp_release(data, HHPConfig(seed=3, node={"dx": "icd9"}, **FAST))


def test_no_node_meets_an_impossible_threshold(data):
    with pytest.raises(ParameterError, match="no node meets"):
        hhp_release(data, HHPConfig(seed=3, k=10_000, **FAST))


def test_empty_input_is_refused_not_released_empty():
    with pytest.raises(InputError, match="keep no member or no claim"):
        hhp_release(synthetic(3).iloc[0:0], HHPConfig(seed=1, **FAST))


def test_input_screening_empties_is_refused_with_counts_only(data):
    """Every member has an HIV claim (section 2): the library refuses, as the
    CLI does, naming counts and no member, claim or code."""
    hiv = data.assign(dx_code=lambda d: d["dx_code"].where(
        d.groupby("member_id").cumcount() > 0, "0420"))
    with pytest.raises(InputError) as raised:
        hhp_release(hiv, HHPConfig(seed=1, **FAST))
    err = raised.value
    n = hiv["member_id"].nunique()
    assert err.source == "claims" and err.row is None
    assert err.problem == ("the release would keep no member or no claim (screening removed "
                           f"{n} of {n} members); nothing released")
    for value in [*hiv["member_id"].unique(), "0420", "042"]:
        assert value not in str(err)


@pytest.mark.parametrize("params, field", [
    ({"k": 0}, "k"), ({"max_sup": 1.5}, "max_sup"), ({"p_max": 0}, "p_max"),
    ({"p_rounding": "up"}, "p_rounding"), ({"truncation_percentile": 0}, "truncation_percentile"),
    ({"sample_size": 0}, "sample_size"), ({"min_iterations": 1}, "min_iterations"),
    ({"ci_halfwidth": -1}, "ci_halfwidth"), ({"qis": ("dx", "zip")}, "qis"), ({"qis": ()}, "qis"),
    ({"seed": -1}, "seed"), ({"node": {"dx": 1}}, "node"), ({"rare_visible_codes": "7571"},
                                                          "rare_visible_codes"),
    ({"policy_path": "/nonexistent.yaml"}, "policy_path"), ({"max_evaluations": 0},
                                                           "max_evaluations"),
    ({"marketer_qis": ("dx",)}, "marketer_qis"), ({"k": True}, "k")])
def test_config_validation(params, field):
    with pytest.raises(ParameterError) as err:
        HHPConfig(**params)
    assert err.value.field == field


def test_inconsistent_sex_is_an_input_error(data):
    from anonymizers.errors import InputError

    first = data["member_id"].iloc[0]
    rows = data.index[data["member_id"] == first]
    assert len(rows) > 1
    bad = data.copy()
    bad.loc[rows[1], "sex"] = "2" if bad.loc[rows[0], "sex"] == "1" else "1"
    with pytest.raises(InputError, match="sex"):
        hhp_release(bad, HHPConfig(seed=1, **FAST))


def test_metrics_and_report_are_json(result):
    import json

    json.dumps(result.metrics)
    json.dumps(result.screening_report)


def test_risk_of_one_node_alone(result, data):
    from anonymizers.claims import assess_node

    config = HHPConfig(seed=result.metrics["seed"], **FAST)
    r = assess_node(data, result.metrics["chosen_node"], config)
    assert r.risk == result.metrics["risk"] and r.candidate
    with pytest.raises(ParameterError, match="seed"):
        assess_node(data, {}, HHPConfig(**FAST))


def test_a_subset_of_quasi_identifiers_and_a_marketer_population(data):
    res = hhp_release(data, HHPConfig(seed=5, qis=("dx", "dsfc", "age", "sex"),
                                      marketer_population=10_000, **FAST))
    assert list(res.claims.columns) == ["member_id", "dx", "dsfc"]
    assert list(res.members.columns) == ["member_id", "age", "sex"]
    assert res.metrics["qis_absent"]["procedure"] == "not selected (HHPConfig.qis)"
    assert res.metrics["marketer_risk"]["population"] >= 10_000 - len(res.members)
    assert 0 < res.metrics["marketer_risk"]["theta"] < 1
    assert verify_hhp(res, data).ok
