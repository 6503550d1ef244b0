"""UGACLIPConfig names its code system (issues 24, 27): with no hierarchy
given, UGACLIP weighs IL on, and places codes in, the tree of
``config.code_system``; the CLI sets it from ``--code-system``."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.__main__ import main
from anonymizers.errors import ParameterError
from anonymizers.hierarchy import icd10cm
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.ugaclip import UGACLIPConfig, ugaclip
from anonymizers.verify.ugaclip import verify_release

ICD10 = [["E119", "I10"], ["E119", "I10", "J45909"], ["J45909", "J45902"], ["E785", "I10"],
         ["S52521A", "I10"], ["E119", "E785"]]
UTILITY = [["E119", "E785"], ["J45902", "J45909"], ["I10"], ["S52521A"]]


def icd10_records() -> pd.DataFrame:
    rows = [(f"p{i}", c) for i in range(18) for c in ICD10[i % len(ICD10)]]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def test_code_system_is_declared_with_icd9_the_default():
    assert UGACLIPConfig(2).code_system == "icd9cm"
    assert UGACLIPConfig(2, code_system="icd10cm").code_system == "icd10cm"
    with pytest.raises(ParameterError, match="code_system"):
        UGACLIPConfig(2, code_system="icd11")


def test_icd10_run_without_a_hierarchy_places_every_code_in_the_icd10_tree():
    df = icd10_records()
    privacy = [list(c) for c in extract_policy(df, PPEConfig(3)).constraints]
    result = ugaclip(df, privacy, UTILITY, UGACLIPConfig(3, code_system="icd10cm"))
    assert result.metrics["unplaced_codes"] == []
    assert verify_release(df, result.to_dict(), privacy, 3).ok
    given = ugaclip(df, privacy, UTILITY, UGACLIPConfig(3), hierarchy=icd10cm())
    assert result.to_dict() == given.to_dict()  # the same tree as passing it
    # the default (ICD-9-CM) tree cannot place these codes: the field is what places them
    icd9 = ugaclip(df, privacy, UTILITY, UGACLIPConfig(3))
    assert set(icd9.metrics["unplaced_codes"]) == set(df["code"])


def test_cli_sets_the_code_system_from_its_option(tmp_path, capsys):
    claims, policy, utility = tmp_path / "c.csv", tmp_path / "p.json", tmp_path / "u.json"
    icd10_records().to_csv(claims, index=False)
    utility.write_text(json.dumps(UTILITY))
    assert main(["ppe", "--k", "3", "--code-system", "icd10cm", "--input", str(claims),
                 "--output", str(policy)]) == 0
    out = tmp_path / "r.json"
    assert main(["ugaclip", "--k", "3", "--seed", "1", "--privacy-policy", str(policy), "--utility-policy",
                 str(utility), "--code-system", "icd10cm", "--input", str(claims),
                 "--output", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["unplaced_codes"] == []
