"""Utility policies of Section 6.1 (Loukides et al. 2014): hierarchy-based
(levels 1-3 on ICD-9-CM), similarity-based, frequency-based (FP-Growth), and
their JSON form."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import from_parent_map
from anonymizers.policies import (check_policy, frequency_policy, hierarchy_policy,
                                  load_policy, save_policy, similarity_policy, unplaced_codes)

CODES = ["4011", "4019", "401", "4021", "40201", "25001", "2500", "2800", "2811",
         "V154", "V1582", "E9500", "-1", "-9", "XYZ"]


def test_level1_groups_by_three_digit_category():
    assert hierarchy_policy(CODES, 1) == [
        ["2500", "25001"], ["2800"], ["2811"], ["401", "4011", "4019"], ["40201", "4021"],
        ["E9500"], ["V154", "V1582"]]


def test_level2_groups_by_section():
    # 401-405 holds 401 and 402; 280 and 281 hang under chapter 280-289 directly,
    # so at level 2 each category is its own group
    assert hierarchy_policy(CODES, 2) == [
        ["2500", "25001"], ["2800"], ["2811"], ["401", "4011", "4019", "40201", "4021"],
        ["E9500"], ["V154", "V1582"]]


def test_level3_groups_by_chapter():
    assert hierarchy_policy(CODES, 3) == [
        ["2500", "25001"], ["2800", "2811"], ["401", "4011", "4019", "40201", "4021"],
        ["E9500"], ["V154", "V1582"]]


def test_dotted_codes_keep_their_spelling():
    assert hierarchy_policy(["401.1", "401.9", "250.01"], 1) == [["250.01"], ["401.1", "401.9"]]


def test_unplaced_codes_are_reported():
    assert unplaced_codes(CODES) == ["-1", "-9", "XYZ"]
    assert unplaced_codes(CODES + ["390-459"], level=1) == ["-1", "-9", "390-459", "XYZ"]
    assert unplaced_codes(["390-459", "401-405"], level=2) == ["390-459"]
    placed = {c for g in hierarchy_policy(CODES, 1) for c in g}
    assert placed | set(unplaced_codes(CODES, level=1)) == set(CODES)


@pytest.mark.parametrize("level", [0, 4, "1", True])
def test_bad_level(level):
    with pytest.raises(ParameterError):
        hierarchy_policy(CODES, level)


def test_policies_accept_another_hierarchy():
    tree = from_parent_map({"A": "*", "B": "*", "a1": "A", "a2": "A", "b1": "B"})
    assert hierarchy_policy(["a1", "a2", "b1", "q"], 3, tree) == [["a1", "a2"], ["b1"]]
    assert similarity_policy(["b1", "a2", "a1"], 2, tree) == [["a1", "a2"], ["b1"]]


def test_similarity_policy_cuts_hierarchy_order():
    policy = similarity_policy(CODES, 3)
    assert [len(u) for u in policy] == [3, 3, 3, 3]
    flat = [c for u in policy for c in u]
    # depth-first order of the tree: a node, then its subtree; chapters in label order
    assert flat == ["2500", "25001", "2800", "2811", "401", "4011", "4019", "40201", "4021",
                    "E9500", "V154", "V1582"]
    with pytest.raises(ParameterError):
        similarity_policy(CODES, 0)


def test_frequency_policy_takes_disjoint_frequent_itemsets():
    sets = [["a", "b", "c"]] * 5 + [["a", "b"]] * 3 + [["c", "d"]] * 4 + [["e"]] * 8
    data = pd.DataFrame([(i, c) for i, s in enumerate(sets) for c in s],
                        columns=["patient_id", "code"])
    # 20 records; 25 % = 5 records: {a,b,c} (5) is the largest frequent itemset
    assert frequency_policy(data, 25) == [["a", "b", "c"], ["e"]]
    # 20 %: {c, d} has 4 records, but c is taken by {a, b, c}; d stays alone
    assert frequency_policy(data, 20) == [["a", "b", "c"], ["d"], ["e"]]
    assert frequency_policy(sets, 25) == frequency_policy(data, 25)
    with pytest.raises(ParameterError):
        frequency_policy(data, 0)


def test_policy_json_round_trip(tmp_path):
    path = tmp_path / "u.json"
    save_policy([("b", "a"), ["c"]], path)
    assert json.loads(path.read_text()) == [["a", "b"], ["c"]]
    assert load_policy(path) == [["a", "b"], ["c"]]


@pytest.mark.parametrize("doc", [{"u1": ["a"]}, [["a"], ["a", "b"]], [["a", 1]], ["a"],
                                 [[""]]])
def test_bad_policies_are_rejected(tmp_path, doc):
    path = tmp_path / "u.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError):
        load_policy(path)


def test_check_policy_sorts_and_dedupes():
    assert check_policy([["b", "a", "b"]]) == [["a", "b"]]


@pytest.mark.datasets
def test_meps_policies(datasets_dir):
    df = pd.read_csv(datasets_dir / "informs_meps2005" / "conditions05.csv.gz", dtype=str)
    codes = df["ICD9CODX"].unique()
    level1 = hierarchy_policy(codes, 1)
    assert len(level1) == 599 and all(len(u) == 1 for u in level1)
    assert unplaced_codes(codes, level=1) == ["-1", "-9"]
    assert len(hierarchy_policy(codes, 3)) <= 19
    assert all(len(u) == 10 for u in similarity_policy(codes, 10)[:-1])
    sup = frequency_policy(df.rename(columns={"DUPERSID": "patient_id",
                                              "ICD9CODX": "code"}), 2.5)
    assert sup and len({c for u in sup for c in u}) == sum(len(u) for u in sup)


def test_code_system_icd9cm_is_the_default_tree():
    for level in (1, 2, 3):
        assert hierarchy_policy(CODES, level, code_system="icd9cm") == hierarchy_policy(CODES,
                                                                                        level)
    assert similarity_policy(CODES, 3, code_system="icd9cm") == similarity_policy(CODES, 3)
    assert unplaced_codes(CODES, code_system="icd9cm") == unplaced_codes(CODES)
