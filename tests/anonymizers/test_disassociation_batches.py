"""Disassociation split into batches of HORPART clusters gives the same
release as one run, whatever the batch size (issue #7)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_disassociation_properties import cases, long

from anonymizers.disassociation import DisassociationConfig, TooFewRecords, disassociate
from anonymizers.disassociation.batches import combine, plan, run_batch
from anonymizers.errors import ParameterError
from anonymizers.verify.disassociation import (
    verify_disassociation,
    verify_disassociation_batches,
)


def batched(data: pd.DataFrame, cfg: DisassociationConfig, batch_size: int):
    p = plan(data, cfg)
    fragments = []
    for lo, hi in reversed(p.batches(batch_size, cfg.refine_window)):  # any order
        rows = p.rows[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi)]
        mine = data[data["patient_id"].isin(rows["patient_id"])]
        fragments.append(run_batch(mine, rows, cfg, p.n_clusters))
    return combine(p, fragments, cfg)


def with_window(case, window):
    sets, cfg = case
    return long(sets), DisassociationConfig(**{**cfg.__dict__, "refine_window": window})


@given(cases(), st.integers(1, 4), st.integers(1, 9))
def test_any_batch_size_gives_the_same_release(case, window, batch_size):
    data, cfg = with_window(case, window)
    if len(case[0]) < cfg.k:  # refused whole and in batches alike
        with pytest.raises(TooFewRecords):
            plan(data, cfg)
        return
    whole = disassociate(data, cfg)
    release, metrics = batched(data, cfg, batch_size)
    assert release.to_json() == whole.to_json()
    assert metrics == whole.metrics
    assert verify_disassociation(data, release.to_json()).ok


def synthetic(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    codes = np.array([f"{c:03d}" for c in range(60)], dtype=object)
    weights = 1 / np.arange(1, 61) ** 1.1
    lens = rng.integers(1, 12, size=n)
    rows = [(f"p{i}", c) for i in range(n)
            for c in rng.choice(codes, size=lens[i], replace=False, p=weights / weights.sum())]
    return pd.DataFrame(rows, columns=["patient_id", "code"])


def test_several_batches_on_a_larger_dataset():
    data = synthetic(3000, 1)
    cfg = DisassociationConfig(5, 2, refine_window=16, seed=3)
    p = plan(data, cfg)
    assert len(p.batches(40, 16)) >= 5  # really split
    release, metrics = batched(data, cfg, 40)
    whole = disassociate(data, cfg)
    assert release.to_json() == whole.to_json()
    assert metrics["n_joint_clusters"] > 0  # refining ran inside the windows


def test_batches_are_whole_refine_windows():
    data = synthetic(500, 2)
    cfg = DisassociationConfig(5, 2, refine_window=8, seed=0)
    p = plan(data, cfg)
    ranges = p.batches(10, 8)
    assert all(lo % 8 == 0 for lo, _ in ranges)
    assert ranges[-1][1] == p.n_clusters
    lo, hi = 4, 12  # not on a window boundary
    rows = p.rows[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi)]
    with pytest.raises(ParameterError, match="whole refine windows"):
        run_batch(data, rows, cfg, p.n_clusters)


def test_combine_refuses_missing_batches():
    data = synthetic(500, 3)
    cfg = DisassociationConfig(5, 2, refine_window=4, seed=0)
    p = plan(data, cfg)
    (lo, hi), *_ = p.batches(4, 4)
    rows = p.rows[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi)]
    with pytest.raises(ParameterError, match="clusters"):
        combine(p, [run_batch(data, rows, cfg, p.n_clusters)], cfg)


def test_a_batch_must_end_on_a_window_boundary():
    data = synthetic(500, 4)
    cfg = DisassociationConfig(5, 2, refine_window=8, seed=0)
    p = plan(data, cfg)
    rows = p.rows[p.rows["cluster"] < 12]  # ends inside the second window
    with pytest.raises(ParameterError, match="whole refine windows"):
        run_batch(data, rows, cfg, p.n_clusters)


def claimed_batches(p, ranges):
    return [(lo, hi, p.rows.loc[(p.rows["cluster"] >= lo) & (p.rows["cluster"] < hi),
                                "patient_id"].tolist()) for lo, hi in ranges]


@given(cases(), st.integers(1, 3), st.integers(1, 6))
def test_batch_verifier_accepts_batched_releases(case, window, batch_size):
    data, cfg = with_window(case, window)
    if len(case[0]) < cfg.k:  # refused (see above)
        return
    p = plan(data, cfg)
    release, _ = batched(data, cfg, batch_size)
    verdict = verify_disassociation_batches(
        data, release.to_json(), claimed_batches(p, p.batches(batch_size, window)))
    assert verdict.ok, verdict.violations


def _batched_case(seed=5):
    data = synthetic(800, seed)
    cfg = DisassociationConfig(5, 2, refine_window=4, seed=0)
    p = plan(data, cfg)
    release, _ = batched(data, cfg, 4)
    return data, p, release.to_json(), claimed_batches(p, p.batches(4, 4))


def test_batch_verifier_checks_the_claimed_split():
    data, p, doc, claim = _batched_case()
    assert verify_disassociation_batches(data, doc, claim).ok
    (lo0, hi0, pat0), (lo1, hi1, pat1), *rest = claim
    swapped = [(lo0, hi0, pat1), (lo1, hi1, pat0), *rest]  # patients in the wrong batch
    assert not verify_disassociation_batches(data, doc, swapped).ok
    twice = [(lo0, hi0, pat0 + pat1[:1]), (lo1, hi1, pat1), *rest]
    assert "two batches" in " ".join(verify_disassociation_batches(data, doc, twice).violations)
    gap = [(lo0, hi0, pat0), *rest]
    assert not verify_disassociation_batches(data, doc, gap).ok
    # an empty range may not claim patients (it would hide up to k-1 of them)
    hidden = [(lo0, hi0, pat0[2:]), (hi0, hi0, pat0[:2]), (lo1, hi1, pat1), *rest]
    assert "no cluster" in " ".join(verify_disassociation_batches(data, doc, hidden).violations)
    lost = [(lo0, hi0, pat0[1:]), (lo1, hi1, pat1), *rest]
    assert not verify_disassociation_batches(data, doc, lost).ok


def test_batch_verifier_refuses_a_shared_chunk_across_batches():
    data, p, doc, claim = _batched_case()
    doc = {**doc, "shared_chunks": doc["shared_chunks"] + [
        {"clusters": [claim[0][1] - 1, claim[1][0]], "codes": [], "subrecords": []}]}
    verdict = verify_disassociation_batches(data, doc, claim)
    assert "several batches" in " ".join(verdict.violations)


def test_batch_verifier_catches_a_small_cluster():
    data, p, doc, claim = _batched_case()
    first = doc["clusters"][0]
    assert first["size"] >= 5
    doc["clusters"][0] = {**first, "size": first["size"] - 1, "record_chunks": [
        {**ch, "subrecords": ch["subrecords"][:-1]} for ch in first["record_chunks"]]}
    assert not verify_disassociation_batches(data, doc, claim).ok


@given(st.lists(st.integers(0, 1000), max_size=60), st.integers(1, 8), st.integers(1, 40))
def test_batches_tile_whole_windows_with_balanced_work(codes, window, batch_size):
    from anonymizers.disassociation.batches import Plan

    p = Plan(pd.DataFrame(), len(codes), {}, np.array(codes, dtype=np.int64))
    ranges = p.batches(batch_size, window)
    n_windows = -(-len(codes) // window)
    assert len(ranges) <= -(-n_windows // -(-batch_size // window))  # no more tasks than before
    assert [lo for lo, _ in ranges] == [0, *(hi for _, hi in ranges[:-1])][:len(ranges)]
    assert all(lo < hi and lo % window == 0 for lo, hi in ranges)
    assert (ranges[-1][1] if ranges else 0) == len(codes)
    # every cut is the window boundary nearest to its share of the work, so no
    # batch exceeds its share by more than one window on each side
    work = [sum(codes[lo:hi]) for lo, hi in ranges]
    heaviest = max((sum(codes[i:i + window]) for i in range(0, len(codes), window)), default=0)
    assert all(w <= sum(codes) / len(ranges) + 2 * heaviest for w in work)


def test_batches_even_out_the_work_on_skewed_clusters():
    from anonymizers.disassociation.batches import Plan

    codes = np.repeat(np.arange(60, 0, -1), 16)  # HORPART order: the heaviest clusters first
    p = Plan(pd.DataFrame(), len(codes), {}, codes)
    work = [codes[lo:hi].sum() for lo, hi in p.batches(160, 16)]
    assert len(work) == 6
    assert max(work) / min(work) < 1.3  # equal cluster counts gave 4.2


def test_plan_counts_the_codes_of_every_cluster():
    data = synthetic(500, 5)
    p = plan(data, DisassociationConfig(5, 2))
    per_cluster = data.merge(p.rows, on="patient_id").groupby("cluster").size()
    assert p.codes.tolist() == per_cluster.reindex(range(p.n_clusters)).tolist()
    records = p.rows.groupby("cluster").size()
    assert p.sizes.tolist() == records.reindex(range(p.n_clusters)).tolist()


def test_work_weighs_records_and_codes_per_record():
    from anonymizers.disassociation.batches import WORK_PER_RECORD, Plan

    p = Plan(pd.DataFrame(), 3, {}, np.array([10, 40, 0]), np.array([5, 5, 5]))
    assert p.work().tolist() == [5 * WORK_PER_RECORD + 20, 5 * WORK_PER_RECORD + 320,
                                 5 * WORK_PER_RECORD]
    # a cluster of long records weighs more than one with as many pairs in short records
    long, short = Plan(pd.DataFrame(), 2, {}, np.array([600, 600]), np.array([10, 60])).work()
    assert long > short
    assert Plan(pd.DataFrame(), 2, {}, np.array([3, 4])).work().tolist() == [3, 4]
    assert Plan(pd.DataFrame(), 2, {}).work().tolist() == [1, 1]
