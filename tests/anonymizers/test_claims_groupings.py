"""Groupings and hierarchies against the paper's tables (El Emam et al. 2012,
appendix sections 7-10, Tables 2-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonymizers.claims.groupings import DATA, group_of, level_labels, load_hierarchies
from anonymizers.errors import InputError


@pytest.fixture(scope="module")
def h():
    return load_hierarchies()


def pcg(h, code):
    return group_of(h["dx"].levels[0], code)


def test_45_primary_condition_groups(h):
    groups = set(level_labels(h["dx"].levels[0])) - {"OTHER", "NONE"}
    assert len(groups) == 45  # "k = 1, ..., 45" (section 4.1)
    assert {"AMI", "RENAL3", "UTI", "MSC2a3", "ODaBNCA", "SEPSIS"} <= groups


@pytest.mark.parametrize("code, group", [
    # table rows as printed
    ("4100", "AMI"), ("41401", "AMI"), ("5849", "RENAL1"), ("4660", "RESPR4"),
    ("7865", "ROAMI"), ("78650", "ROAMI"), ("V717", "ROAMI"), ("7862", "RESPR4"),
    ("0389", "SEPSIS"), ("0031", "SEPSIS"), ("00321", "SEPSIS"), ("9993", "SEPSIS"),
    ("0011", "INFEC4"), ("7806", "INFEC4"), ("7110", "INFEC4"), ("0110", "PNEUM"),
    ("0128", "PNEUM"), ("4292", "HEART4"), ("4290", "CHF"), ("39891", "CHF"), ("4019", "MISCHRT"),
    ("7331", "FXDISLC"), ("73310", "FXDISLC"), ("7330", "ARTHSPIN"), ("8208", "HIPFX"),
    ("9596", "HIPFX"), ("99681", "RENAL2"), ("V4201", "RENAL2"), ("99685", "HEMTOL"),
    ("9970", "STROKE"), ("99700", "STROKE"), ("2752", "FLAELEC"), ("2751", "METAB3"),
    ("2510", "METAB1"), ("7800", "METAB1"), ("7801", "SEIZURE"), ("7804", "SEIZURE"),
    ("7850", "HEART2"), ("7854", "SEPSIS"), ("78559", "SEPSIS"), ("796", "ODaBNCA"),
    ("7903", "ODaBNCA"), ("7907", "SEPSIS"), ("7921", "GIBLEED"), ("7904", "MSC2a3"),
    ("V5869", "MSC2a3"), ("E8889", "MSC2a3"), ("V22", "PRGNCY"), ("V270", "PRGNCY"),
    ("V580", "CANCRB"), ("V662", "CANCRB"), ("V710", "NEUMENT"), ("338", "MISCL5"),
    ("7830", "MISCL5"), ("3000", "NEUMENT"), ("3450", "SEIZURE"), ("3200", "SEPSIS"),
    ("7460", "MISCHRT"), ("7400", "MISCL5"), ("1830", "CANCRM"), ("1740", "GYNECA"),
    ("1620", "CANCRA"), ("1500", "CANCRB"), ("5770", "PNCRDZ"), ("4240", "PERVALV"),
    ("7700", "PERINTL"), ("6500", "PRGNCY"), ("5990", "UTI"), ("5920", "RENAL3"),
    ("2180", "GYNEC1"), ("5700", "LIVERDZ"), ("9900", "MISCL1"), ("4340", "STROKE"),
    ("6900", "SKNAUT"), ("7820", "SKNAUT"), ("4900", "COPD"), ("5550", "GIOBSENT"),
    ("5400", "APPCHOL"), ("8000", "TRAUMA"), ("8500", "TRAUMA"), ("9600", "ODaBNCA"),
    # readings of "misc." and "multiple" entries (documented in icd9_pcg.csv)
    ("4300", "CATAST"), ("8520", "CATAST"), ("4275", "CATAST"), ("25010", "METAB1"),
    ("25000", "METAB3"), ("40501", "RENAL3"), ("73314", "HIPFX"), ("9053", "HIPFX"),
    ("0700", "LIVERDZ"), ("4200", "PERVALV"), ("99664", "UTI"),
    # no group
    ("2090", "OTHER"), ("3900", "OTHER"), ("-1", "OTHER"), ("糖尿病", "OTHER"), ("", "NONE"),
])
def test_primary_condition_groups(h, code, group):
    assert pcg(h, code) == group


def test_728_follows_the_table_literally(h):
    # "joint infections & muscle infections (711 & 728)": the whole of 728 is INFEC4,
    # except 728.86 listed under SEPSIS
    assert pcg(h, "72871") == "INFEC4" and pcg(h, "72886") == "SEPSIS"


CPT = [("ANES", "00100", "01999"), ("EM", "99201", "99499"), ("MED", "90281", "99199"),
       ("MED", "99500", "99602"), ("PL", "80048", "89356"), ("RAD", "70010", "79999"),
       ("SAS", "69000", "69979"), ("SCS", "33010", "37799"), ("SDS", "40490", "49999"),
       ("SEOA", "65091", "68899"), ("SGS", "54000", "55899"), ("SGS", "56405", "58999"),
       ("SIS", "10040", "19499"), ("SMCD", "59000", "59899"), ("SMS", "20000", "29999"),
       ("SNS", "61000", "64999"), ("SO", "60000", "60699"), ("SO", "39000", "39599"),
       ("SO", "69990", "69990"), ("SRS", "30000", "32999"), ("SUS", "50010", "53899")]


@pytest.mark.parametrize("group, first, last", CPT)
def test_cpt_group_ranges(h, group, first, last):
    lv0, lv1 = h["procedure"].levels[:2]
    section = group if not group.startswith("S") else "SURGERY"
    for code in (first, last):
        assert group_of(lv0, code) == group and group_of(lv1, code) == section
    for outside in (f"{int(first) - 1:05d}", f"{int(last) + 1:05d}"):
        assert group_of(lv0, outside) != group


@pytest.mark.parametrize("code", ["02000", "38100", "99603", "0001T", "1234F", "9921", "-1"])
def test_cpt_codes_outside_the_table_are_other(h, code):
    assert group_of(h["procedure"].levels[0], code) == "OTHER"


@pytest.mark.parametrize("code, group", [
    ("11", "OFFICE"), ("21", "INPATIENT HOSPITAL"), ("22", "OUTPATIENT HOSPITAL"),
    ("23", "URGENT CARE"), ("20", "URGENT CARE"), ("24", "AMBULANCE"), ("41", "AMBULANCE"),
    ("12", "HOME"), ("81", "INDEPENDENT LAB"), ("31", "OTHER"), ("55", "OTHER"),
    ("99", "OTHER"), ("XX", "OTHER"), ("", "NONE")])
def test_place_of_service_groups(h, code, group):
    assert group_of(h["place_of_service"].levels[0], code) == group


@pytest.mark.parametrize("code, group", [
    ("08", "GENERAL PRACTICE"), ("01", "GENERAL PRACTICE"), ("1", "GENERAL PRACTICE"),
    ("11", "INTERNAL"), ("A0", "INTERNAL"), ("05", "ANESTHESIOLOGY"), ("93", "EMERGENCY"),
    ("30", "DIAGNOSTIC IMAGING"), ("69", "LABORATORY"), ("16", "OBSTETRICS AND GYNECOLOGY"),
    ("22", "PATHOLOGY"), ("37", "PEDIATRIC"), ("65", "REHABILITATION"), ("02", "SURGERY"),
    ("26", "OTHER"), ("82", "OTHER"), ("FAMILY PRACTICE", "GENERAL PRACTICE"),
    ("PEDIATRIC UROLOGY", "PEDIATRIC"), ("WOUND CARE", "SURGERY"), ("HEMATOLOGY", "OTHER"),
    ("ZZ", "OTHER")])
def test_specialty_groups(h, code, group):
    assert group_of(h["specialty"].levels[0], code) == group


def test_specialty_groups_are_the_papers(h):
    groups = set(level_labels(h["specialty"].levels[0])) - {"NONE"}
    assert groups == {"ANESTHESIOLOGY", "DIAGNOSTIC IMAGING", "EMERGENCY", "GENERAL PRACTICE",
                      "INTERNAL", "LABORATORY", "OBSTETRICS AND GYNECOLOGY", "PATHOLOGY",
                      "PEDIATRIC", "REHABILITATION", "SURGERY", "OTHER"}


def test_table_bins(h):
    bins = {lv["name"]: [b[2] for b in lv.get("bins", [])] for lv in h["length_of_stay"].levels}
    assert bins["table4"][1:] == ["1 day", "2 days", "3 days", "4 days", "5 days", "6 days",
                                  "1-2 weeks", "2-4 weeks", "4-8 weeks", "8-12 weeks",
                                  "12-26 weeks", "26+ weeks"]
    age = {lv["name"]: [b[2] for b in lv.get("bins", [])] for lv in h["age"].levels}
    assert age["table3"] == ["0-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69",
                             "70-79", "80+"]
    dsfc = {lv["name"]: [b[2] for b in lv.get("bins", [])] for lv in h["dsfc"].levels}
    assert dsfc["months"][:12] == [f"{m}-{m + 1} months" for m in range(12)]


def test_numeric_encoding_nests():
    enc = load_hierarchies()["length_of_stay"].encode(np.array([0, 1, 6, 7, 13, 14, 200]))
    table4 = enc.labels[1][enc.maps[1][enc.code0]]
    coarse = enc.labels[2][enc.maps[2][enc.code0]]
    assert list(table4) == ["none", "1 day", "6 days", "1-2 weeks", "1-2 weeks", "2-4 weeks",
                            "26+ weeks"]
    assert list(coarse) == ["none", "1-6 days", "1-6 days", "1-4 weeks", "1-4 weeks",
                            "1-4 weeks", "4+ weeks"]
    assert set(enc.labels[3]) == {"*"}


def test_categorical_encoding_counts_fallback():
    enc = load_hierarchies()["dx"].encode(np.array(["4100", "2090", "", "2090"], dtype=object))
    assert enc.fallback == {"values": 2, "distinct_codes": 1, "missing_values": 1}
    labels = enc.labels[0][enc.code0]
    assert list(labels) == ["AMI", "OTHER", "NONE", "OTHER"]


def test_ambiguous_grouping_file_is_refused(tmp_path):
    (tmp_path / "g.csv").write_text("group,first,last,basis\nA,401,405,x\nB,403,407,x\n")
    doc = (DATA / "hierarchies.yaml").read_text().replace("file: icd9_pcg.csv", "file: g.csv")
    (tmp_path / "h.yaml").write_text(doc)
    for f in ("cpt_groups.csv", "place_of_service_groups.csv", "specialty_groups.csv"):
        (tmp_path / f).write_text((DATA / f).read_text())
    with pytest.raises(InputError, match="ambiguous"):
        load_hierarchies(tmp_path / "h.yaml")


def test_every_pcg_row_is_table_or_reading():
    rows = pd.read_csv(DATA / "icd9_pcg.csv", dtype=str, keep_default_na=False)
    assert rows["basis"].str.match(r"^(table|reading: )").all()
