"""Screening of high-risk members and claims (El Emam et al. 2012, appendix
sections 2-3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.claims import screen
from anonymizers.claims.screening import _OtherDx
from anonymizers.errors import InputError


def table(rows: list[dict]) -> pd.DataFrame:
    base = {"claim_id": None, "service_date": "20090105", "age_at_service": 50, "sex": "1",
            "dx_code": "4019", "procedure_code": "99213", "place_of_service": "11"}
    out = []
    for i, r in enumerate(rows):
        row = dict(base, **r)
        row["claim_id"] = row["claim_id"] or f"C{i}"
        out.append(row)
    return pd.DataFrame(out)


def removed_members(df) -> set:
    return set(screen(df).removed_members["member_id"])


@pytest.mark.parametrize("field, code", [
    ("dx_code", "0420"), ("dx_code", "043"), ("dx_code", "0449"), ("dx_code", "6340"),
    ("dx_code", "639.9"), ("dx_code", "6300"), ("dx_code", "6331"), ("dx_code", "99550"),
    ("dx_code", "995.81"), ("dx_code", "99583"), ("dx_code", "E950"), ("dx_code", "E9689"),
    ("dx_code", "V1541"), ("dx_code", "2910"), ("dx_code", "29281"), ("dx_code", "30390"),
    ("dx_code", "3050"), ("dx_code", "3021"), ("dx_code", "317"), ("dx_code", "3189"),
    ("dx_code", "V501"), ("dx_code", "V510"), ("procedure_code", "55970"),
    ("procedure_code", "55980"), ("procedure_code", "59100"), ("procedure_code", "59812"),
    ("procedure_code", "59851"), ("procedure_code", "59857"), ("procedure_code", "89700"),
    ("place_of_service", "55"), ("place_of_service", "56"), ("place_of_service", "57")])
def test_listed_codes_remove_the_member_and_all_claims(field, code):
    df = table([{"member_id": "A", field: code}, {"member_id": "A"}, {"member_id": "B"}])
    res = screen(df)
    assert set(res.removed_members["member_id"]) == {"A"}
    assert res.claims["member_id"].tolist() == ["B"]
    assert res.kept.tolist() == [False, False, True]


@pytest.mark.parametrize("field, code", [
    ("dx_code", "0410"), ("dx_code", "045"), ("dx_code", "6290"), ("dx_code", "640"),
    ("dx_code", "9954"), ("dx_code", "99580"), ("dx_code", "99584"), ("dx_code", "E949"),
    ("dx_code", "E970"), ("dx_code", "V155"), ("dx_code", "290"), ("dx_code", "306"),
    ("dx_code", "3010"), ("dx_code", "316"), ("dx_code", "320"), ("dx_code", "V500"),
    ("dx_code", "V52"), ("procedure_code", "55960"), ("procedure_code", "59099"),
    ("procedure_code", "59853"), ("procedure_code", "59854"), ("procedure_code", "89600"),
    ("place_of_service", "54"), ("place_of_service", "58")])
def test_near_misses_are_kept(field, code):
    assert removed_members(table([{"member_id": "A", field: code}])) == set()


def test_other_diagnoses_are_screened_too():
    df = table([{"member_id": "A", "other_dx_codes": "4019; 042.1,2500"},
                {"member_id": "B", "other_dx_codes": "4019 25000"}])
    assert removed_members(df) == {"A"}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text("0V9E.;, \t\u00a0é", max_size=10), max_size=25),
       st.lists(st.text("0V9E", min_size=1, max_size=3), max_size=3).map(tuple))
def test_other_diagnoses_match_alike_from_arrow_and_from_python_strings(values, prefixes):
    """The distinct lists of an Arrow-backed column are split as Arrow, of an
    object column as Python strings: the same claims match."""
    arrow = _OtherDx(pd.Series(values, dtype="str"))
    python = _OtherDx(np.array(values, dtype=object))
    assert arrow.hits(prefixes, ("9E",)).tolist() == python.hits(prefixes, ("9E",)).tolist()


def test_rare_visible_codes_from_the_policy():
    from anonymizers.claims import load_policy

    df = table([{"member_id": "A", "dx_code": "7571"}, {"member_id": "B"}])
    assert removed_members(df) == set()
    res = screen(df, load_policy().with_rare_visible(["757.1"]))
    assert set(res.removed_members["member_id"]) == {"A"}
    assert res.report["member_rules"]["rare_visible_disease"]["members"] == 1


def test_claim_rules_remove_claims_only():
    df = table([
        {"member_id": "A", "procedure_code": "G0008"},      # level II: letter prefix
        {"member_id": "A", "procedure_code": "450"},        # three digit revenue code
        {"member_id": "A", "procedure_code": "0450"},       # four digits: kept
        {"member_id": "A", "procedure_code": ""},           # no procedure: kept
        {"member_id": "A", "procedure_code": "99213"},
        {"member_id": "B", "procedure_code": "J1100"},      # B loses its only claim
        {"member_id": "C", "service_date": "20090129", "birth_date": "20090101"},  # day 28
        {"member_id": "C", "service_date": "20090130", "birth_date": "20090101"},  # day 29
    ])
    res = screen(df)
    assert res.removed_members.empty
    assert res.kept.tolist() == [False, False, True, True, True, False, False, True]
    r = res.report
    assert r["claim_rules"]["non_medical_procedure"]["claims"] == 3
    assert r["claim_rules"]["newborn"]["claims"] == 1
    assert r["members_emptied_by_claim_rules"] == 1
    assert r["kept"] == {"members": 2, "claims": 4}


def test_rules_without_their_column_are_reported_not_applied():
    df = table([{"member_id": "A"}]).drop(columns=["place_of_service", "procedure_code"])
    r = screen(df).report
    assert "place_of_service_55_57: no place_of_service column" in r["not_applied"]
    assert "newborn: no birth_date column" in r["not_applied"]
    assert any(x.startswith("intersex_surgery") for x in r["not_applied"])
    assert any(x.startswith("non_medical_procedure") for x in r["not_applied"])


def test_comparison_tables_and_ks():
    rng = np.random.default_rng(0)
    rows = []
    for m in range(200):
        old = m < 40
        for c in range(int(rng.integers(1, 6)) + (20 if old else 0)):
            rows.append({"member_id": f"M{m}", "dx_code": "0420" if old and c == 0 else "4019",
                         "age_at_service": int(rng.integers(60, 90) if old else
                                               rng.integers(0, 60)),
                         "service_date": str(np.datetime64("2009-01-01") + c * 9).replace("-", ""),
                         "length_of_stay": int(rng.integers(0, 4))})
    comp = screen(table(rows)).report["comparison"]
    assert comp["excluded_members"] == 40 and comp["remaining_members"] == 160
    assert comp["age"]["ks"]["pvalue"] < 1e-4                  # older, as in Table 3
    assert comp["claims_per_member"]["ks"]["pvalue"] < 1e-4
    assert comp["claims_per_member"]["median_excluded"] > comp["claims_per_member"][
        "median_remaining"]
    assert [r["value"] for r in comp["age"]["table"]][-1] == "80+"
    assert len(comp["dsfc"]["table"]) == 13 and len(comp["los"]["table"]) == 12
    assert sum(r["excluded_pct"] for r in comp["sex"]["table"]) == pytest.approx(100)


def test_comparison_without_exclusions_has_no_test():
    comp = screen(table([{"member_id": "A"}])).report["comparison"]
    assert comp["age"]["ks"]["pvalue"] is None and "empty" in comp["age"]["ks"]["note"]


def test_screen_keeps_the_input_columns_and_index():
    df = table([{"member_id": "A", "dx_code": "0420"}, {"member_id": "B"}]).set_index(
        pd.Index([10, 20]))
    res = screen(df)
    assert res.claims.index.tolist() == [20] and list(res.claims.columns) == list(df.columns)
    assert res.policy_version == "hhp-2012-v1"


@pytest.mark.parametrize("change, field", [
    ({"member_id": None}, "member_id"), ({"service_date": "2009-13-45"}, "service_date"),
    ({"sex": "X"}, "sex"), ({"age_at_service": -1}, "age_at_service"),
    ({"age_at_service": "4.5"}, "age_at_service"), ({"length_of_stay": "x"}, "length_of_stay")])
def test_bad_input_names_row_and_field(change, field):
    df = table([{"member_id": "A"}, dict({"member_id": "B"}, **change)])
    with pytest.raises(InputError) as err:
        screen(df)
    assert err.value.field == field and err.value.row == 2


def test_missing_column():
    with pytest.raises(InputError, match="missing column"):
        screen(table([{"member_id": "A"}]).drop(columns=["dx_code"]))


def test_dates_in_every_accepted_form():
    df = table([{"member_id": "A", "service_date": "2009-01-05"},
                {"member_id": "A", "service_date": "20090106"},
                {"member_id": "A", "service_date": pd.Timestamp("2009-01-07")}])
    assert screen(df).kept.all()
    df2 = df.assign(service_date=pd.to_datetime(["2009-01-05", "2009-01-06", "2009-01-07"]))
    assert screen(df2).kept.all()
