"""PPE (Loukides et al. 2010, SI Algorithm 1) on hand-made cases worked out
from the paper, plus config, input and output-shape checks."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anonymizers.errors import InputError, ParameterError
from anonymizers.ppe import PPEConfig, extract_policy, policy_from_dict
from anonymizers.verify.ppe import verify_policy


def long_table(records: dict, visits: bool = False) -> pd.DataFrame:
    """{patient: [codes]} or, with visits, {patient: {visit: [codes]}}."""
    rows = []
    for pid, value in records.items():
        if visits:
            rows += [(pid, vid, c) for vid, codes in value.items() for c in codes]
        else:
            rows += [(pid, c) for c in value]
    cols = ["patient_id", "visit_id", "code"] if visits else ["patient_id", "code"]
    return pd.DataFrame(rows, columns=cols)


def policy(df, k, filt="all-visits"):
    result = extract_policy(df, PPEConfig(k, filt))
    assert verify_policy(df, result.to_dict(), k, filt).ok
    return result


# All-visits example.  Records: P1 {a,b,c}, P2 {a,b}, P3 {a,b,c}, P4 {d}, P5 {a}.
# Line 2 sorts by size: {a,b,c}_P1, {a,b,c}_P3, {a,b}, {a}, {d}.
# i = {a,b,c}_P1: lines 4-8 discard the later records it contains:
#   {a,b,c}_P3, {a,b}, {a}; {d} stays.  Line 9: {a,b,c} is held by P1 and P3.
#   k=2: 2 >= 2, discarded (protected);  k=3: 2 < 3, kept.
# i = {d}: nothing after it; support 1 < k, kept.
ALL_VISITS = {"P1": ["a", "b", "c"], "P2": ["a", "b"], "P3": ["c", "b", "a"],
              "P4": ["d"], "P5": ["a"]}


def test_all_visits_k2_keeps_only_the_unprotected_maximal_record():
    result = policy(long_table(ALL_VISITS), 2)
    assert result.constraints == [("d",)]
    m = result.metrics
    assert (m["n_filtered_records"], m["n_distinct_filtered_records"]) == (5, 4)
    assert m["discarded_as_subsets"] == 3          # {a,b,c}_P3, {a,b}, {a}
    assert m["discarded_as_protected"] == 1        # {a,b,c}
    assert m["n_constraints"] == 1 and m["constraint_sizes"] == {"1": 1}


def test_all_visits_k3_keeps_both_maximal_records_largest_first():
    result = policy(long_table(ALL_VISITS), 3)
    assert result.constraints == [("a", "b", "c"), ("d",)]
    assert result.to_dict() == {"k": 3, "filter": "all-visits",
                                "constraints": [["a", "b", "c"], ["d"]]}
    assert result.metrics["constraint_sizes"] == {"1": 1, "3": 1}


def test_k1_means_everything_is_protected():
    assert policy(long_table(ALL_VISITS), 1).constraints == []


def test_subset_with_low_support_is_covered_not_listed():
    # P1 {x,y,z}, P2 {x,y}: sorted {x,y,z}, {x,y}.  i={x,y,z} discards {x,y}
    # (line 6) and has support 1 < 2: kept.  {x,y} (support 2) needs nothing of
    # its own, and {x,y} is inside {x,y,z} anyway.  With P3 {w,x}: {w,x} is not a
    # subset of {x,y,z}, support 1: kept; sizes tie, so lexicographic order.
    df = long_table({"P1": ["x", "y", "z"], "P2": ["x", "y"], "P3": ["w", "x"]})
    assert policy(df, 2).constraints == [("x", "y", "z"), ("w", "x")]
    # k=4: {x} has support 3 < 4 but lies in {x,y,z}: still two constraints.
    assert policy(df, 4).constraints == [("x", "y", "z"), ("w", "x")]


# Single-visit: patient X has visits v1 {a,b} and v2 {a,b}; Z has v1 {c}.
# Filtered records: {a,b}_X1, {a,b}_X2, {c}_Z1.  i={a,b}_X1 discards {a,b}_X2.
# Line 9 counted over visit records would see 2 records holding {a,b} and drop
# it at k=2, although only patient X has a and b: the attacker who knows that
# visit finds one released record.  Support counts patients: 1 < 2, kept.
def test_single_visit_support_counts_patients_not_visits():
    df = long_table({"X": {"v1": ["a", "b"], "v2": ["b", "a"]}, "Z": {"v1": ["c"]}}, visits=True)
    assert policy(df, 2, "single-visit").constraints == [("a", "b"), ("c",)]


# Patient Y has a in v1 and b in v2: the released record of Y holds {a,b}, so Y
# covers X's visit {a,b}: support 2 >= 2, discarded.  {a}_Y1 and {b}_Y2 were
# discarded by line 6 as subsets of {a,b}_X1.
def test_single_visit_counts_codes_spread_over_visits():
    df = long_table({"X": {"v1": ["a", "b"]}, "Y": {"v1": ["a"], "v2": ["b"]},
                     "Z": {"v1": ["c"]}}, visits=True)
    result = policy(df, 2, "single-visit")
    assert result.constraints == [("c",)]
    assert result.metrics["n_filtered_records"] == 4
    assert result.metrics["discarded_as_subsets"] == 2


def test_single_visit_visit_ids_are_per_patient():
    # the same visit_id string under two patients is two visits
    df = long_table({"X": {"1": ["a"]}, "Y": {"1": ["b"]}}, visits=True)
    assert policy(df, 2, "single-visit").constraints == [("a",), ("b",)]


def test_all_visits_ignores_a_visit_column():
    df = long_table({"X": {"v1": ["a"], "v2": ["b"]}, "Y": {"v1": ["a", "b"]}}, visits=True)
    assert policy(df, 2, "all-visits").constraints == []
    assert policy(df, 3, "all-visits").constraints == [("a", "b")]


def test_duplicate_rows_collapse_and_codes_are_opaque():
    df = long_table({"P1": ["-1", "-1", "V15.4", "é"], "P2": ["10292", "E950"]})
    assert policy(df, 2).constraints == [("-1", "V15.4", "é"), ("10292", "E950")]


def test_long_record_of_250_codes():
    codes = [f"c{i:03d}" for i in range(250)]
    df = long_table({"P1": codes, "P2": codes[:100], "P3": codes[50:60]})
    assert policy(df, 2).constraints == [tuple(codes)]


def test_empty_input_gives_empty_policy():
    df = pd.DataFrame({"patient_id": [], "code": []}, dtype=str)
    result = policy(df, 3)
    assert result.constraints == [] and result.metrics["n_patients"] == 0


@pytest.mark.parametrize("k, filt", [(0, "all-visits"), (-2, "all-visits"), (2.5, "all-visits"),
                                     (True, "all-visits"), (2, "single"), (2, None)])
def test_config_rejects_bad_parameters(k, filt):
    with pytest.raises(ParameterError):
        PPEConfig(k, filt)


def test_single_visit_without_visit_id_names_the_column():
    with pytest.raises(InputError, match="visit_id"):
        extract_policy(long_table(ALL_VISITS), PPEConfig(2, "single-visit"))


def test_empty_code_is_reported_with_row():
    df = pd.DataFrame({"patient_id": ["a", "b"], "code": ["1", None]})
    with pytest.raises(InputError, match="row 2"):
        extract_policy(df, PPEConfig(2))


def test_policy_dict_round_trip_and_validation():
    result = policy(long_table(ALL_VISITS), 3)
    back = policy_from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.constraints == result.constraints and back.k == 3
    for bad in ({"k": 2}, {"k": 0, "constraints": []}, {"k": 2, "constraints": [[]]},
                {"k": 2, "constraints": [[1]]}, {"k": 2, "constraints": "a"}, []):
        with pytest.raises(InputError):
            policy_from_dict(bad)


@pytest.mark.datasets
def test_meps_all_visits_policy_is_fast_and_verified(datasets_dir):
    import time

    from anonymizers.io import read_table
    df = read_table(datasets_dir / "informs_meps2005" / "conditions05.csv.gz",
                    ["DUPERSID", "ICD9CODX"]).rename(columns={"DUPERSID": "patient_id",
                                                              "ICD9CODX": "code"})
    t0 = time.perf_counter()
    result = extract_policy(df, PPEConfig(5, "all-visits"))
    assert time.perf_counter() - t0 < 15
    assert result.metrics["n_patients"] == 26854
    assert verify_policy(df, result.to_dict(), 5, "all-visits").ok


@pytest.mark.datasets
def test_synpuf_single_visit_policy_on_real_claims(datasets_dir):
    """Carrier claims of DE-SynPUF TestB: a visit is a claim (CLM_ID)."""
    path = (datasets_dir / "synpuf" / "cms_bfd_sample_testB"
            / "DE1_0_2008_to_2010_Carrier_Claims_Sample_TestBA.csv.gz")
    raw = pd.read_csv(path, dtype=str)
    cols = [c for c in raw.columns if "ICD9_DGNS_CD" in c]
    df = (raw.melt(id_vars=["DESYNPUF_ID", "CLM_ID"], value_vars=cols, value_name="code")
          .dropna(subset=["code"])
          .rename(columns={"DESYNPUF_ID": "patient_id", "CLM_ID": "visit_id"}))
    df = df[["patient_id", "visit_id", "code"]]
    for k in (2, 5):
        result = extract_policy(df, PPEConfig(k, "single-visit"))
        assert result.metrics["n_filtered_records"] == df.groupby(["patient_id", "visit_id"]).ngroups
        assert verify_policy(df, result.to_dict(), k, "single-visit").ok
