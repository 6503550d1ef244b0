"""LDA against its independent verifier on random data, edge cases, and
broken releases the verifier must catch."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal import framework
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.verify.longitudinal import verify_lda

CODES = ["401.1", "4019", "401.0", "250.00", "25001", "272.4", "V15.4", "E950", "E9500",
         "486", "-1", "10292", "Ü12", "780.79", "V70.0"]
COLUMNS = ["patient_id", "code", "age"]


def frame(trajectories, ids=None) -> pd.DataFrame:
    ids = ids or [f"id{i}" for i in range(len(trajectories))]
    rows = [(p, c, a) for p, t in zip(ids, trajectories) for c, a in t]
    return pd.DataFrame(rows, columns=COLUMNS)


def run(df, k, alignment="a-gs", seed=0, icd_domain="data"):
    """LDA checked by the verifier; None when LDA refuses a release that would
    keep nothing, after checking that refusal independently: the release
    LDA withheld (obtained by disabling the check) holds only ('*', '*')."""
    config = LDAConfig(k=k, alignment=alignment, seed=seed, icd_domain=icd_domain)
    try:
        result = lda(df, config)
    except NothingToRelease as exc:
        if "keeps nothing" not in str(exc):
            assert df["patient_id"].nunique() < k
            return None
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(framework, "_keeps_anything", lambda records: True)
            withheld = lda(df, config)
        assert (withheld.records[["code", "age"]] == "*").all().all()
        assert verify_lda(withheld.records, withheld.pseudonym_map, df, k).ok
        return None
    verdict = verify_lda(result.records, result.pseudonym_map, df, k)
    assert verdict.ok, verdict.violations
    return result


pair = st.tuples(st.sampled_from(CODES), st.integers(0, 130))
cohort = st.lists(st.lists(pair, min_size=1, max_size=10), min_size=1, max_size=14)


@given(cohort, st.integers(1, 5), st.sampled_from(["a-gs", "baseline"]), st.integers(0, 3),
       st.none() | st.lists(st.sampled_from(["", "2008-01-02", "2008-01-01", "20090105"]),
                            min_size=140, max_size=140), st.sampled_from(["data", "hierarchy"]))
def test_release_passes_the_verifier(trajectories, k, alignment, seed, dates, icd_domain):
    df = frame(trajectories)
    if dates is not None:  # service dates (some empty) reorder pairs of the same age
        df["service_date"] = dates[:len(df)]
    if len(trajectories) < k:
        with pytest.raises(NothingToRelease, match="no cluster of k patients"):
            lda(df, LDAConfig(k=k, alignment=alignment, seed=seed, icd_domain=icd_domain))
        return
    result = run(df, k, alignment, seed, icd_domain)
    if result is None:
        return
    m = result.metrics
    assert 0 <= m["ilm"] <= 1 and 0 <= m["alm"] <= 1
    assert k <= m["min_cluster_size"] and m["max_cluster_size"] <= max(k, 2 * k - 1)
    assert len(result.patients) == len(trajectories)
    assert m["released_pairs"] + m["suppressed_pairs"] <= len(df)


def released(trajectories, k):
    """(input, release) for a cohort of at least k patients, else (None, None)."""
    if len(trajectories) < k:
        return None, None
    df = frame(trajectories)
    result = run(df, k)
    return (None, None) if result is None else (df, result)


@given(cohort, st.integers(2, 4))
def test_verifier_catches_a_generalization_that_does_not_cover(trajectories, k):
    df, result = released(trajectories, k)
    if result is None or result.records.empty:
        return
    records = result.records.copy()
    records.loc[0, "age"] = "129"  # no original age is 129
    assert not verify_lda(records, result.pseudonym_map, df, k).ok


@given(cohort, st.integers(1, 4))
def test_verifier_catches_groups_smaller_than_claimed(trajectories, k):
    df, result = released(trajectories, k)
    if result is None:
        return
    rows = result.records.groupby("patient_id")
    trajectory = {p: tuple(zip(g["code"], g["age"])) for p, g in rows}
    shared = Counter(trajectory.get(p, ()) for p in result.patients)
    smallest = min(shared.values())
    assert smallest >= k
    assert not verify_lda(result.records, result.pseudonym_map, df, smallest + 1).ok


def test_verifier_catches_order_changes_and_reused_ids():
    df = frame([[("401.1", 33), ("250.00", 34)]] * 2)
    result = run(df, 2)
    swapped = result.records.copy()
    swapped["position"] = 1 - swapped["position"]
    assert not verify_lda(swapped, result.pseudonym_map, df, 2).ok
    leaked = result.pseudonym_map.copy()
    renamed = result.records.replace({leaked.loc[0, "pseudonym"]: "id1"})
    leaked.loc[0, "pseudonym"] = "id1"
    verdict = verify_lda(renamed, leaked, df, 2)
    assert not verdict.ok and any("equal an input patient id" in v for v in verdict.violations)


def test_verifier_catches_a_code_that_is_not_an_ancestor():
    df = frame([[("401.1", 33)], [("401.9", 33)]])
    result = run(df, 2)
    assert result.records["code"].tolist() == ["401", "401"]
    bad = result.records.assign(code="250")
    assert not verify_lda(bad, result.pseudonym_map, df, 2).ok
    dropped = result.records.iloc[1:]  # one patient loses its pairs: groups of 1
    assert not verify_lda(dropped, result.pseudonym_map, df, 2).ok


def test_empty_input_is_refused():
    with pytest.raises(NothingToRelease, match="0 patient"):
        lda(pd.DataFrame(columns=COLUMNS), LDAConfig(k=1, seed=0))


def test_one_patient():
    df = frame([[("401.1", 40), ("250.00", 41)]])
    result = run(df, 1)
    assert result.records[["code", "age"]].values.tolist() == [["401.1", "40"], ["250.00", "41"]]
    assert result.metrics["ilm"] == 0.0
    with pytest.raises(NothingToRelease, match="1 patient.s. for k=2"):
        lda(df, LDAConfig(k=2, seed=0))


def test_identical_trajectories_are_released_unchanged():
    t = [("401.1", 33), ("272.4", 33), ("401.1", 34)]
    result = run(frame([t] * 6), 3)
    assert result.metrics["ilm"] == 0.0 and result.metrics["alm"] == 0.0
    assert result.metrics["avg_re"] == 0.0
    assert len(result.records) == 18


def test_a_patient_with_500_pairs():
    rng = np.random.default_rng(0)
    long = [(CODES[i % 10], int(a)) for i, a in enumerate(np.sort(rng.integers(20, 90, 500)))]
    others = [[(CODES[i % 10], 30 + i)] for i in range(5)]
    result = run(frame([long] + others), 3)
    assert result.metrics["n_pairs"] == 505
    assert result.metrics["min_cluster_size"] >= 3


def test_codes_outside_the_hierarchy_become_root_and_are_reported():
    df = frame([[("-1", 40), ("10292", 41)], [("Ü12", 40), ("401.1", 41)]])
    result = run(df, 2)
    assert result.unknown_codes == ["-1", "10292", "Ü12"]
    assert result.metrics["unknown_codes"] == 3
    assert result.metrics["pairs_with_unknown_code"] == 3
    assert set(result.records["code"]) == {"*"}


def test_ages_outside_the_domain_become_root():
    result = run(frame([[("401.1", 0)], [("401.1", 0)]]), 2)
    assert result.records["age"].tolist() == ["*", "*"]
    assert result.metrics["ages_outside_domain"] == 2
    assert result.metrics["alm"] == 1.0
