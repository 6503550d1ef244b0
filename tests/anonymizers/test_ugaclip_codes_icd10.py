"""UGACLIP's code placement, IL weights and utility policies on ICD-10-CM
(issue 27), and ICD-9-CM staying the default."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.codesystems import Mapping
from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import icd9cm, icd10cm
from anonymizers.ugaclip.codes import dotted, place, system_of
from anonymizers.ugaclip.loss import SemanticWeights
from anonymizers.ugaclip.policy import UtilityPolicy, load_utility_policy


def test_trees_name_their_code_system_and_placement_follows_it():
    assert icd9cm().code_system == "icd9cm" and icd10cm().code_system == "icd10cm"
    assert system_of(None) == "icd9cm" and system_of(icd10cm()) == "icd10cm"
    with pytest.raises(ParameterError, match="code_system"):
        system_of(icd9cm(), "icd10cm")
    with pytest.raises(ParameterError):
        system_of(None, "icd11")


def test_icd10_dotted_forms_differ_from_icd9_e_codes():
    # ICD-9's E codes take the dot after 4 characters, ICD-10's E11.9 after 3
    assert dotted("E8889") == "E888.9" and dotted("E119", "icd10cm") == "E11.9"
    assert dotted("S52521A", "icd10cm") == "S52.521A" and dotted("I10", "icd10cm") == "I10"
    assert dotted("OTHER", "icd10cm") == "OTHER" and dotted("25000") == "250.00"


def test_icd10_codes_are_placed_by_deepest_listed_prefix():
    tree = icd10cm()
    assert place("E11.9", tree) == place("e119", tree) == "E119"
    assert place("Z99.999", tree) == "Z99"      # extended past the list: its category
    assert place("E11.99999", tree) is None     # 8 characters: not an ICD-10-CM shape
    assert place("J45.20", tree) == "J4520"
    assert place("OTHER", tree) is None and place("-1", tree) is None
    assert place("A00-A09", tree) == "A00-A09"  # a block label is a node
    assert place("E1199", icd9cm()) is None     # the ICD-9 tree has no such node


def test_il_weights_on_icd10_use_its_leaves():
    codes = ["J4520", "J45.21", "J4522", "I10", "ZZZ"]
    w = SemanticWeights(codes, icd10cm(), code_system="icd10cm")
    assert w.code_system == "icd10cm" and w.total == icd10cm().n_leaves("*")
    assert w.weight([0, 1, 2]) == pytest.approx(icd10cm().n_leaves("J452") / w.total)
    assert w.weight([0, 3]) == pytest.approx(1.0)  # asthma with hypertension: the root
    assert w.unplaced == ["ZZZ"] and w.weight([0, 4]) == 1.0
    with pytest.raises(ParameterError):
        SemanticWeights(codes, icd9cm(), code_system="icd10cm")


def test_bundled_policy_needs_a_mapping_for_icd10():
    with pytest.raises(ParameterError, match="ICD-9-CM"):
        load_utility_policy("pnas2010-k5", code_system="icd10cm")
    icd9 = load_utility_policy("pnas2010-k5", strip_dots=True)
    assert load_utility_policy("pnas2010-k5", strip_dots=True, code_system="icd9cm") == icd9


def test_mapped_policy_keeps_constraints_disjoint_and_notes_losses():
    policy = UtilityPolicy.from_lists([["493.00", "493.01", "999.99"], ["250.00", "401.9"]],
                                      ["asthma", "mixed"])
    mapping = Mapping({"49300": "J45909", "49301": "J45902", "25000": "E119",
                       "4019": "J45909"}, {})
    out = policy.mapped(mapping)
    assert out.constraints == (("J45902", "J45909"), ("E119",))
    assert out.names == ("asthma", "mixed")
    assert any("999.99" in n for n in out.notes)
    assert any("401.9 -> J45909, already in asthma" in n for n in out.notes)
    lost = UtilityPolicy.from_lists([["999.99"]], ["gone"]).mapped(mapping)
    assert lost.constraints == () and "left out" in lost.notes[-1]


@pytest.mark.datasets
def test_bundled_policy_through_the_gem(gem_mapping):
    policy = load_utility_policy("pnas2010-k5", code_system="icd10cm", mapping=gem_mapping)
    asthma = policy.constraints[policy.names.index("Asthma")]
    assert asthma and all(c.startswith("J45") for c in asthma)
    owners = [c for u in policy.constraints for c in u]
    assert len(owners) == len(set(owners))


def test_policy_file_is_checked_against_the_code_system(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps([["J45.20", "j4521"], ["I10"]]))
    assert load_utility_policy(str(good), code_system="icd10cm").constraints == (
        ("J45.20", "j4521"), ("I10",))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"constraints": [{"name": "asthma", "codes": ["49300"]}]}))
    with pytest.raises(InputError, match=r"constraint 1 \(asthma\).*ICD-10-CM"):
        load_utility_policy(str(bad), code_system="icd10cm")
    assert load_utility_policy(str(bad)).constraints == (("49300",),)  # no system: no check


@pytest.mark.datasets
def test_ugaclip_end_to_end_on_icd10_with_the_mapped_policy(gem_mapping):
    from anonymizers.ppe import PPEConfig, extract_policy
    from anonymizers.ugaclip import UGACLIPConfig, ugaclip
    from anonymizers.verify.ugaclip import verify_release

    rows = [(f"p{i}", c) for i in range(12)
            for c in (["J45909", "I10"] if i % 3 else ["J45902", "E119", "I10"])]
    rows += [("p0", "J45998"), ("p1", "J45998")]
    df = pd.DataFrame(rows, columns=["patient_id", "code"])
    privacy = [list(c) for c in extract_policy(df, PPEConfig(3)).constraints]
    utility = load_utility_policy("pnas2010-k5", code_system="icd10cm", mapping=gem_mapping)
    result = ugaclip(df, privacy, utility, UGACLIPConfig(3), hierarchy=icd10cm())
    assert verify_release(df, result.to_dict(), privacy, 3).ok
    assert result.metrics["unplaced_codes"] == []


@pytest.fixture(scope="module")
def gem_mapping(datasets_dir):
    from anonymizers.codesystems import gem_forward

    return gem_forward(pd.read_csv(datasets_dir / "icd9" / "icd9toicd10cmgem.csv.gz", dtype=str))
