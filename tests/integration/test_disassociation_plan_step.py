"""The disassociation plan step reads the staged claims a row group at a
time and still writes, per batch, the plan rows and the distinct
(patient, code) rows, in claims order, that the whole table gives."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deid.methods import disassociation as dis
from deid.methods import param_schemas
from deid.methods.ugaclip import utility_policy
from deid.steps import Run

from anonymizers.disassociation import TooFewRecords
from anonymizers.disassociation.batches import plan


def _claims(run: Run, n_patients: int, seed: int) -> pd.DataFrame:
    """Claims with patients interleaved and repeated (patient, code) pairs,
    in row groups of 7 rows."""
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame({"patient_id": [f"m{i:03d}" for i in rng.integers(0, n_patients, 600)],
                         "claim_id": [f"c{i}" for i in range(600)],
                         "code": [f"{c * 24:03d}" for c in rng.zipf(1.6, 600) % 40]})
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False),
                   run.path("claims.parquet"), row_group_size=7)
    return rows


@pytest.mark.parametrize("utility", ["none", "icd9-level-1"])
def test_plan_step_batches_equal_the_whole_table_ones(utility):
    run = Run("dis_plan_step_test", f"r1{utility}")
    claims = _claims(run, 90, seed=5)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy=utility)
    batches = dis.plan(run, params)
    assert pq.ParquetFile(run.path("claims.parquet")).num_row_groups > 80
    assert len(batches) > 3

    records = claims[["patient_id", "code"]].drop_duplicates(ignore_index=True)
    policy = None if utility == "none" else utility_policy(utility, records["code"].unique())
    assert policy is None or len(policy) > 1
    assert run.read_json("dis_batches.json")["policy"] == policy
    whole = plan(records, dis._config(params, policy))
    ranges = whole.batches(4, 2)
    assert run.read_json("dis_batches.json")["ranges"] == [list(r) for r in ranges]
    for b, (lo, hi) in zip(batches, ranges):
        rows = whole.rows[(whole.rows["cluster"] >= lo) & (whole.rows["cluster"] < hi)]
        got = pd.read_parquet(run.path(f"dis_plan.b{b['index']}.parquet"))
        pd.testing.assert_frame_equal(got, rows.reset_index(drop=True))
        expected = records[records["patient_id"].isin(rows["patient_id"])]
        got = pd.read_parquet(run.path(f"dis_records.b{b['index']}.parquet"))
        pd.testing.assert_frame_equal(got, expected.reset_index(drop=True))


def test_fewer_records_than_k_give_one_empty_batch():
    """Fewer than k records: no release keeps the guarantee, so the plan step
    refuses them (TooFewRecords, an InputError) and writes no batch."""
    run = Run("dis_plan_step_test", "r2")
    pd.DataFrame({"patient_id": ["a", "b"], "claim_id": ["1", "2"], "code": ["x", "y"]}) \
        .to_parquet(run.path("claims.parquet"))
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=5, utility_policy="none")
    run.path("dis_records.b0.parquet").unlink(missing_ok=True)  # staging outlives a session
    with pytest.raises(TooFewRecords, match="2 record.*fewer than k = 5"):
        dis.plan(run, params)
    assert not run.path("dis_records.b0.parquet").exists()


def test_the_verifier_reads_each_batch_a_refine_window_at_a_time():
    run = Run("dis_plan_step_test", "r3")
    _claims(run, 90, seed=6)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=6, utility_policy="none")
    dis.plan(run, params)
    for i, (lo, hi) in enumerate(run.read_json("dis_batches.json")["ranges"]):
        parts = dis._windows(run, i, lo, hi, 2)
        assert [a for a, _, _ in parts] == list(range(lo, hi, 2))  # whole windows, in order
        assert [b for _, b, _ in parts] == [*range(lo + 2, hi, 2), hi]
        plan_rows = pd.read_parquet(run.path(f"dis_plan.b{i}.parquet"))
        got = np.concatenate([p for _, _, p in parts])
        assert sorted(got) == sorted(plan_rows["patient_id"]) and len(set(got)) == len(got)
        for a, b, patients in parts:
            assert set(plan_rows.loc[plan_rows["cluster"].between(a, b - 1), "patient_id"]) == \
                set(patients)


def _fresh(run_id: str) -> Run:
    """A run with an empty staging folder (one left by an earlier session is removed)."""
    run = Run("dis_plan_step_test", run_id)
    shutil.rmtree(run.dir)
    run.dir  # noqa: B018 - creates it again
    return run


def _release(run: Run, params: dict) -> list[dict]:
    """plan -> disassociate (each batch) -> combine -> verify_batch (each batch)."""
    batches = dis.plan(run, params)
    for b in batches:
        dis.disassociate(run, params, b)
    dis.combine(run, params)
    for b in batches:
        dis.verify_batch(run, params, b)
    return batches


def test_batch_verdicts_add_up_to_the_whole_table_verifier():
    from anonymizers.verify.disassociation_tables import verify_disassociation_tables

    run = _fresh("r4")
    _claims(run, 90, seed=7)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy="none")
    assert len(_release(run, params)) > 2
    verdict, = dis.verify(run, params)
    ranges = run.read_json("dis_batches.json")["ranges"]
    claim = [w for i, (lo, hi) in enumerate(ranges) for w in dis._windows(run, i, lo, hi, 2)]
    whole = verify_disassociation_tables(
        claim, pd.read_parquet(run.path("claims.parquet"))["patient_id"].unique(),
        dis._table_index(run), dis._records_of(run), dis._chunk_rows(run),
        dis._shared_rows(run), 3, 2)
    assert verdict["ok"] and whole.ok and verdict["checked"] == whole.checked > 0


def test_a_missing_or_failing_batch_verdict_fails_the_release():
    run = _fresh("r5")
    _claims(run, 90, seed=8)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy="none")
    _release(run, params)
    doc = run.read_json("dis_verdict.b1.json")
    run.write_json("dis_verdict.b1.json", {**doc, "violations": ["batch 1 window 0: tampered"]})
    verdict, = dis.verify(run, params)
    assert not verdict["ok"] and verdict["violations"] == ["batch 1 window 0: tampered"]
    run.write_json("dis_verdict.b1.json", {**doc, "windows": doc["windows"][1:]})
    verdict, = dis.verify(run, params)
    assert not verdict["ok"] and "batch 1: verified windows" in verdict["violations"][0]
    run.path("dis_verdict.b1.json").unlink()
    verdict, = dis.verify(run, params)
    assert not verdict["ok"] and verdict["violations"] == [
        "batch 1: no verdict (its verify_batch task did not run)"]


def test_a_batch_verifier_finds_a_tampered_chunk():
    run = _fresh("r6")
    _claims(run, 90, seed=9)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy="none")
    batches = _release(run, params)
    rows = pd.read_parquet(run.path("dis_record_chunks.parquet"))
    chunk = rows[(rows["cluster_id"] == 0) & (rows["chunk_id"] == 0)]
    code = chunk["code"].value_counts().index[0]  # on >= k subrecords of cluster 0's chunk
    drop = chunk.index[chunk["code"] == code][1:]  # keep it on one subrecord only
    rows.drop(index=drop).to_parquet(run.path("dis_record_chunks.parquet"), index=False)
    for b in batches:
        dis.verify_batch(run, params, b)
    verdict, = dis.verify(run, params)
    assert not verdict["ok"]
    assert verdict["violations"] == [(f"batch 0 window 0 (clusters 0..1): code {code!r} is in "
                                      "no item chunk but its released support 7 differs from "
                                      "its input support 9")]


def test_validate_gathers_the_verifier_tasks_and_needs_the_policy_verdict():
    from deid import steps

    run = _fresh("r7")
    _claims(run, 90, seed=10)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=2, batch_size=4, utility_policy="none")
    steps.privacy_policy(run, 3, "all-visits")
    _release(run, params)
    with pytest.raises(steps.ValidationFailed, match="no verify_policy verdict"):
        steps.validate(run, "disassociation", params, {})
    assert steps.verify_policy(run)["ok"]
    out = steps.validate(run, "disassociation", params, {})
    assert out["verdicts"] == {"ppe-policy": True,
                               "k^m-anonymity (Guarantee 1) of a disassociated release": True}


def test_one_refine_window_is_one_batch_and_is_recorded_for_the_later_steps():
    """``refine_window: null`` (the paper's refining over the whole dataset) is
    accepted by a release file and plans one batch; the plan records the
    window it used, which measure and verify read instead of the parameter."""
    from deid.paths import ROOT
    from deid.releases import load_release

    text = (ROOT / "releases" / "disassociation_diagnoses.yaml").read_text()
    assert "refine_window: 1024" in text
    folder = Run("dis_plan_step_test", "r_file").path("releases")
    folder.mkdir(exist_ok=True)
    (folder / "disassociation_diagnoses.yaml").write_text(
        text.replace("refine_window: 1024", "refine_window: null"))
    assert load_release(folder / "disassociation_diagnoses.yaml").params["refine_window"] is None

    run = Run("dis_plan_step_test", "r_one_window")
    _claims(run, 90, seed=5)
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    params.update(k=3, m=2, refine_window=None, batch_size=4, utility_policy="none")
    batches = dis.plan(run, params)
    info = run.read_json("dis_batches.json")
    assert len(batches) == 1 and info["ranges"] == [[0, info["n_clusters"]]]
    assert info["window"] == info["n_clusters"] > 4
    (lo, hi, patients), = dis._windows(run, 0, 0, info["n_clusters"], info["window"])
    assert (lo, hi) == (0, info["n_clusters"]) and len(patients) == 90


def test_a_run_planned_before_plans_recorded_the_window_reads_the_parameter():
    info = {"policy": None, "n_clusters": 10, "ranges": [[0, 10]]}
    params = {n: s["default"] for n, s in param_schemas("disassociation").items()}
    assert dis._planned_window(info, {**params, "refine_window": 4}) == 4
    assert dis._planned_window(info, {**params, "refine_window": None}) == 10
    assert dis._planned_window({**info, "window": 3}, {**params, "refine_window": 4}) == 3
