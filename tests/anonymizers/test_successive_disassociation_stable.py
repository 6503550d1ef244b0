"""Stable clusters with retention over several releases (issue 25), as the
DAG plans them (``stable_plan``): clusters keep their patients, those who
left keep their last published record, fewer than k arrivals are held back,
and ids are opaque (the DAG names patients who left by their keyed links).
The cross-release verifier and the single-release verifier are run against
the releases on random cohort sequences (hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.disassociation import DisassociationConfig
from anonymizers.errors import ParameterError
from anonymizers.successive import disassociation as dis
from anonymizers.successive.check import check
from anonymizers.verify.disassociation import verify_disassociation

K, M = 3, 2


def _cohort(ids, seed: int, n_codes: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(p, f"c{c:02d}") for p in ids
            for c in rng.choice(n_codes, size=rng.integers(1, 5), replace=False)]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def _ids(lo: int, hi: int) -> list[str]:
    return [f"p{i:03d}" for i in range(lo, hi)]


@pytest.fixture(scope="module")
def config():
    return DisassociationConfig(k=K, m=M, seed=3)


def test_clusters_keep_their_patients_and_leavers_their_record(config):
    first = dis.release(_cohort(_ids(0, 40), 1), config)
    records = _cohort(_ids(5, 50), 2)  # p000-p004 left, p040-p049 arrived
    second = dis.release_stable(records, config, first)
    kept = second.membership.merge(first.membership, on="patient_id", suffixes=("", "_1"))
    assert len(kept) == 40 and (kept["cluster"] == kept["cluster_1"]).all()
    left = second.records[second.records["patient_id"].isin(_ids(0, 5))]
    pd.testing.assert_frame_equal(
        left.sort_values(["patient_id", "code"], ignore_index=True),
        first.records[first.records["patient_id"].isin(_ids(0, 5))]
        .sort_values(["patient_id", "code"], ignore_index=True))
    persisting = second.records[second.records["patient_id"].isin(_ids(5, 50))]
    assert len(persisting.merge(records)) == len(records)  # current records, gains included
    new = second.membership[second.membership["patient_id"].isin(_ids(40, 50))]
    assert (new["cluster"] > first.membership["cluster"].max()).all()
    assert second.membership.groupby("cluster").size().min() >= K
    assert (second.metrics["retained_left"], second.metrics["arrived"],
            second.metrics["held_back"]) == (5, 10, 0)


def test_fewer_than_k_arrivals_are_held_back_until_enough_arrive(config):
    first = dis.release(_cohort(_ids(0, 30), 4), config)
    second = dis.release_stable(_cohort(_ids(0, 32), 5), config, first)  # 2 < k arrive
    assert second.held_back == 2 and second.metrics["held_back"] == 2
    assert not set(second.membership["patient_id"]) & set(_ids(30, 32))
    assert not set(second.records["patient_id"]) & set(_ids(30, 32))
    third = dis.release_stable(_cohort(_ids(0, 34), 6), config, second)  # now 4 >= k
    assert third.held_back == 0 and set(_ids(30, 34)) <= set(third.membership["patient_id"])
    verdict = check("disassociation", [first.tables(), second.tables()], third.tables(),
                    {"k": K, "m": M})
    assert verdict.ok, verdict.violations


def test_ids_are_opaque(config):
    """Renaming every patient (as the DAG names leavers by keyed links) gives
    the same release: the plan reads ids only to tell patients apart."""
    first = dis.release(_cohort(_ids(0, 40), 7), config)
    records = _cohort(_ids(6, 52), 8)
    rename = {p: f"link-{i:05d}" for i, p in enumerate(reversed(_ids(0, 52)))}
    renamed = dis.Published(first.release,
                            first.membership.assign(
                                patient_id=first.membership["patient_id"].map(rename)),
                            first.records.assign(
                                patient_id=first.records["patient_id"].map(rename)),
                            first.metrics)
    a = dis.release_stable(records, config, first)
    b = dis.release_stable(records.assign(patient_id=records["patient_id"].map(rename)),
                           config, renamed)
    assert a.release == b.release


def test_an_inconsistent_state_is_refused(config):
    first = dis.release(_cohort(_ids(0, 30), 9), config)
    records = _cohort(_ids(3, 33), 10)
    gap = first.membership.assign(cluster=first.membership["cluster"] * 2)
    with pytest.raises(ParameterError, match="numbered 0 .. n - 1"):
        dis.stable_plan(records, config, gap, first.records)
    twice = pd.concat([first.membership, first.membership.iloc[:1].assign(cluster=0)])
    with pytest.raises(ParameterError, match="two clusters"):
        dis.stable_plan(records, config, twice, first.records)
    lost = first.records[first.records["patient_id"] != "p000"]  # p000 left, no record kept
    with pytest.raises(ParameterError, match="no published record to retain"):
        dis.stable_plan(records, config, first.membership, lost)


@st.composite
def _lineage(draw):
    """Three cohorts over a pool of patients: who is present at each run,
    and a seed per run for their codes (patients gain and lose codes)."""
    n = draw(st.integers(12, 40))
    present = [draw(st.lists(st.booleans(), min_size=n, max_size=n)) for _ in range(3)]
    seeds = draw(st.lists(st.integers(0, 2**16), min_size=3, max_size=3))
    return n, present, seeds


@settings(max_examples=25)
@given(_lineage())
def test_a_lineage_keeps_k_m_anonymity_alone_and_together(case):
    n, present, seeds = case
    config = DisassociationConfig(k=K, m=M, seed=1)
    pool = _ids(0, n)
    published, previous = [], None
    for mask, seed in zip(present, seeds):
        records = _cohort([p for p, here in zip(pool, mask) if here], seed, n_codes=8)
        if previous is None and records["patient_id"].nunique() < K:
            continue  # no first release of fewer than k patients (TooFewRecords)
        out = dis.release_stable(records, config, previous)
        single = verify_disassociation(out.records, out.release, K, M)
        assert single.ok, single.violations
        assert set(out.records["patient_id"]) == set(out.membership["patient_id"])
        if previous is not None:
            kept = out.membership.merge(previous.membership, on="patient_id")
            assert (kept["cluster_x"] == kept["cluster_y"]).all()
            assert len(kept) == len(previous.membership)
            verdict = check("disassociation", [p.tables() for p in published], out.tables(),
                            {"k": K, "m": M})
            assert verdict.ok, verdict.violations
        published.append(out)
        previous = out
