"""LDA end to end (Tamersoy 2011, Chapter IV): Figure 3's 2-anonymization,
the AvgRE example of Section IV.4.1, metrics, configuration and input errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import from_parent_map
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.longitudinal.hierarchies import age_hierarchy, encode_tree
from anonymizers.longitudinal.metrics import avg_re, estimated_counts
from anonymizers.longitudinal.trajectories import build_trajectories
from anonymizers.verify.longitudinal import verify_lda

FIG6 = from_parent_map({"401.0": "*", "401.1": "*", "401.9": "*"})
FIG3A = [(1, "401.1", 33), (1, "401.1", 34), (1, "401.1", 35), (2, "401.1", 38),
         (2, "401.1", 40), (3, "401.9", 38), (3, "401.1", 40), (4, "401.9", 33),
         (4, "401.1", 33), (4, "401.1", 34), (4, "401.1", 35), (5, "401.1", 39),
         (5, "401.9", 40), (6, "401.1", 40), (6, "401.9", 40)]
FIG3C = {1: [("401.1", "33"), ("401.1", "34"), ("401.1", "35")],
         2: [("401", "38"), ("401.1", "40")], 3: [("401", "38"), ("401.1", "40")],
         4: [("401.1", "33"), ("401.1", "34"), ("401.1", "35")],
         5: [("401.1", "39-40"), ("401.9", "40")], 6: [("401.1", "39-40"), ("401.9", "40")]}


def fig3a() -> pd.DataFrame:
    return pd.DataFrame(FIG3A, columns=["patient_id", "code", "age"])


def by_patient(result) -> dict:
    merged = result.records.merge(result.pseudonym_map, left_on="patient_id",
                                  right_on="pseudonym", suffixes=("_r", ""))
    return {p: list(zip(g["code"], g["age"])) for p, g in merged.groupby("patient_id")}


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_figure_3c_is_reproduced(seed):
    result = lda(fig3a(), LDAConfig(k=2, seed=seed))
    assert by_patient(result) == FIG3C
    assert verify_lda(result.records, result.pseudonym_map, fig3a(), 2).ok
    assert result.metrics["n_clusters"] == 3 and result.metrics["suppressed_pairs"] == 1


def test_figure_3c_with_the_figure_6_and_5_trees():
    config = LDAConfig(k=2, seed=0, icd_hierarchy=FIG6, age_hierarchy=age_hierarchy(33, 40))
    result = lda(fig3a(), config)
    assert verify_lda(result.records, result.pseudonym_map, fig3a(), 2, icd_hierarchy=FIG6,
                      age_hierarchy=age_hierarchy(33, 40)).ok
    broken = result.records.assign(age="33-36")
    assert not verify_lda(broken, result.pseudonym_map, fig3a(), 2, icd_hierarchy=FIG6,
                          age_hierarchy=age_hierarchy(33, 40)).ok
    got = by_patient(result)
    assert got[2] == [("*", "38"), ("401.1", "40")]  # * is Figure 6's root, 401
    assert got[5] == [("401.1", "39-40"), ("401.9", "40")]


def test_avg_re_worked_example():
    """Query (401.1, 39) on Figure 3c: two trajectories hold (401.1, [39-40]),
    each with probability 1/2, so e = 1 = a and RE = 0."""
    icd, ids, _ = encode_tree(FIG6, ["401.1", "401.9"])
    age, ages, _ = encode_tree(age_hierarchy(33, 40), ["39", "40", "39-40"])
    q_u, q_v = np.array([ids[0]]), np.array([ages[0]])
    rel_icd = np.array([ids[0], ids[1]])
    rel_age = np.array([age.index["39-40"], ages[1]])
    e = estimated_counts(q_u, q_v, rel_icd, rel_age, np.array([0, 0]), np.array([2]), icd, age)
    assert e.tolist() == [1.0]
    assert avg_re(np.array([1.0]), e) == 0.0
    assert avg_re(np.zeros(0), np.zeros(0)) is None


def test_metrics_of_figure_3c():
    m = lda(fig3a(), LDAConfig(k=2, seed=0)).metrics
    # pairs: 15 in 6 trajectories; ICD: 401.1/401.9 -> 401 (both codes of the
    # data's domain of 2) in two trajectories of 2 pairs, one pair suppressed
    # (1) in a trajectory of 4; Age: 39, 40 -> [39-40] (2/128) twice, suppressed (1)
    assert m["ilm"] == pytest.approx((2 * 2 / 2 / 2 + 1 / 4) / 6)
    assert m["icd_domain"] == "data"
    assert m["ilm_by_level"]["3-digit"] == pytest.approx(2 * 2 / 2 / 2 / 6)
    assert m["ilm_by_level"]["any"] == pytest.approx(1 / 4 / 6)
    assert sum(m["ilm_by_level"].values()) == pytest.approx(m["ilm"])
    assert sum(m["alm_by_level"].values()) == pytest.approx(m["alm"])
    assert m["icd_kept_3digit_or_finer"] == pytest.approx(100 * 14 / 15)
    assert m["age_kept_16year_or_finer"] == pytest.approx(100 * 14 / 15)
    # the whole ICD-9-CM tree: 401 holds 3 of its 14,567 codes
    h = lda(fig3a(), LDAConfig(k=2, seed=0, icd_domain="hierarchy")).metrics
    assert h["ilm"] == pytest.approx((2 * 3 / 14567 / 2 + 1 / 4) / 6)
    assert h["alm"] == m["alm"]
    assert m["alm"] == pytest.approx((2 * (2 / 128) / 2 + 1 / 4) / 6)
    assert m["icd_levels"]["any"] == pytest.approx(100 / 15)
    assert m["age_levels"]["2-year"] == pytest.approx(200 / 15)
    assert sum(m["icd_levels"].values()) == pytest.approx(100)
    assert m["n_queries"] == 9 and m["released_pairs"] == 14


def test_same_seed_same_release_and_fresh_pseudonyms():
    a = lda(fig3a(), LDAConfig(k=2, seed=5))
    b = lda(fig3a(), LDAConfig(k=2, seed=5))
    pd.testing.assert_frame_equal(a.records, b.records)
    assert not set(a.records["patient_id"]) & {str(p) for p in range(1, 7)}
    assert list(a.records.columns) == ["patient_id", "position", "code", "age"]


def test_baseline_release_is_k_anonymous():
    result = lda(fig3a(), LDAConfig(k=3, alignment="baseline", seed=0))
    assert verify_lda(result.records, result.pseudonym_map, fig3a(), 3).ok
    assert result.metrics["alignment"] == "baseline"


def test_service_date_breaks_ties_before_the_code():
    df = pd.DataFrame({"patient_id": ["a", "a", "a"], "code": ["250.00", "401.1", "272.4"],
                       "age": ["40", "40", "39"],
                       "service_date": ["2008-05-01", "2008-01-01", "2007-12-30"]})
    traj = build_trajectories(df)
    assert traj.codes.tolist() == ["272.4", "401.1", "250.00"]
    traj = build_trajectories(df.drop(columns="service_date"))
    assert traj.codes.tolist() == ["272.4", "250.00", "401.1"]
    mixed = df.assign(service_date=["20080501", "2008-01-01", ""])  # formats mixed, one empty
    assert build_trajectories(mixed).codes.tolist() == ["272.4", "401.1", "250.00"]
    mixed = df.assign(service_date=["2008-01-01", "20080501", "2007-12-30"])
    assert build_trajectories(mixed).codes.tolist() == ["272.4", "250.00", "401.1"]


@pytest.mark.parametrize("kwargs,field", [
    ({"k": 0}, "k"), ({"k": 2.5}, "k"), ({"k": True}, "k"),
    ({"k": 2, "w_icd": -0.1, "w_age": 1.1}, "w_icd"),
    ({"k": 2, "w_icd": 0.5, "w_age": 0.6}, "w_icd"),
    ({"k": 2, "alignment": "greedy"}, "alignment"), ({"k": 2, "seed": -1}, "seed"),
    ({"k": 2, "icd_domain": "leaves"}, "icd_domain")])
def test_config_rejects_bad_parameters(kwargs, field):
    with pytest.raises(ParameterError) as err:
        LDAConfig(**kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("k,rows", [(7, FIG3A), (1, []), (2, FIG3A[:3])])
def test_fewer_patients_than_k_is_refused(k, rows):
    """No patient, or fewer than k: nothing can be released."""
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    with pytest.raises(NothingToRelease, match="no cluster of k patients"):
        lda(df, LDAConfig(k=k, seed=0))
    assert issubclass(NothingToRelease, InputError)


def test_a_release_of_nothing_but_roots_is_refused():
    """Two patients with no code and no age in common: A-GS generalizes both
    pairs to ('*', '*') (a tie with suppression goes to generalization), so
    the only 2-anonymous release keeps nothing."""
    df = pd.DataFrame([("a", "401.1", 30), ("b", "250.00", 90)],
                      columns=["patient_id", "code", "age"])
    with pytest.raises(NothingToRelease, match="keeps nothing"):
        lda(df, LDAConfig(k=2, seed=0))
    assert len(lda(df, LDAConfig(k=1, seed=0)).records) == 2


@pytest.mark.parametrize("column,value,problem", [
    ("age", "33.5", "whole number"), ("age", "old", "whole number"),
    ("service_date", "not a date", "not a date")])
def test_bad_values_are_reported_with_row_and_field(column, value, problem):
    df = fig3a().astype(str)
    df["service_date"] = "2008-01-01"
    df.loc[3, column] = value
    with pytest.raises(InputError, match=problem) as err:
        lda(df, LDAConfig(k=2, seed=0))
    assert (err.value.row, err.value.field) == (4, column)


def test_missing_column_and_empty_value():
    with pytest.raises(InputError, match="missing column"):
        lda(fig3a().drop(columns="age"), LDAConfig(k=2))
    df = fig3a().astype(object)
    df.loc[2, "code"] = None
    with pytest.raises(InputError) as err:
        lda(df, LDAConfig(k=2))
    assert (err.value.row, err.value.field) == (3, "code")
