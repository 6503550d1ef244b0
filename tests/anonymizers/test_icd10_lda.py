"""LDA on ICD-10-CM code strings: generalization through the ICD-10-CM tree,
checked by the independent verifier on random data."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymizers.hierarchy import ROOT
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.longitudinal.hierarchies import (
    ICD10_LEVELS,
    ICD_STYLE,
    icd10_display,
    icd10_level,
    icd_hierarchy,
)
from anonymizers.verify.longitudinal import verify_lda

# 7-character codes with X placeholders, subcategories, categories, the same
# code dotted, lower-case and padded, and strings outside ICD-10-CM
CODES = ["S52.521A", "S52521D", "T36.0X1A", "t360x2a", "S01.00XA", "I10", " I11.0", "E11.9",
         "E1165", "E11.65", "M80.011A", "Z00.00", "4019", "XX000", "Ü12"]
COLUMNS = ["patient_id", "code", "age"]


@pytest.fixture(scope="module")
def tree():
    return icd_hierarchy("icd10cm")


def frame(trajectories) -> pd.DataFrame:
    rows = [(f"id{i}", c, a) for i, t in enumerate(trajectories) for c, a in t]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_codes_of_one_subcategory_generalise_to_it_not_to_the_root(tree):
    df = frame([[("T36.0X1A", 70)], [("T36.0X2A", 70)], [("T36.0X1A", 71)],
                [("T36.0X2A", 71)]])
    result = lda(df, LDAConfig(k=4, seed=1, icd_hierarchy=tree))
    assert result.records["code"].tolist() == ["T360X"] * 4
    assert verify_lda(result.records, result.pseudonym_map, df, 4, icd_hierarchy=tree).ok


def test_the_icd9_tree_loses_every_icd10_code():
    # what the project did before issue 27: ICD-10 codes unknown, released as *
    df = frame([[("T36.0X1A", 70)], [("T36.0X2A", 70)]])
    result = lda(df, LDAConfig(k=2, seed=1))
    assert result.records["code"].tolist() == [ROOT, ROOT]
    assert result.metrics["unknown_codes"] == 2


def test_display_and_levels():
    assert icd10_display("S52521A") == "S52.521A" and icd10_display("I10") == "I10"
    assert icd10_display("S50-S59") == "S50-S59" and icd10_display(ROOT) == ROOT
    assert [icd10_level(x, d) for x, d in [("S00-T88", 1), ("S50-S59", 2), ("S52", 3),
                                           ("S5252", 5), ("S52521A", 7), (ROOT, 0)]] == [
        "chapter", "block", "category", "5-character", "7-character", "any"]
    assert set(ICD10_LEVELS) >= {"7-character", "category", "block", "chapter", "any"}
    assert ICD_STYLE["icd10cm"] == (icd10_display, icd10_level, ICD10_LEVELS)


pair = st.tuples(st.sampled_from(CODES), st.integers(0, 130))
cohort = st.lists(st.lists(pair, min_size=1, max_size=8), min_size=2, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cohort, st.integers(1, 4), st.sampled_from(["a-gs", "baseline"]), st.integers(0, 3))
def test_release_on_icd10_passes_the_verifier(trajectories, k, alignment, seed):
    tree = icd_hierarchy("icd10cm")
    df = frame(trajectories)
    config = LDAConfig(k=k, alignment=alignment, seed=seed, icd_hierarchy=tree)
    try:
        result = lda(df, config)
    except NothingToRelease:
        return
    verdict = verify_lda(result.records, result.pseudonym_map, df, k, icd_hierarchy=tree)
    assert verdict.ok, verdict.violations
    # every released code is the root or a node of the ICD-10-CM tree
    assert all(c == ROOT or c in tree for c in result.records["code"])
