"""The UGACLIP benchmark still runs on small samples (400 MEPS patients, 40
DE-SynPUF beneficiaries): every release passes the verifier, UGACLIP never
suppresses fewer codes than any lower bound nor more than suppression-only."""

from __future__ import annotations

import pytest


@pytest.mark.datasets
def test_bench_ugaclip_small(datasets_dir, monkeypatch):
    import benchmarks.bench_ugaclip as bench

    for knob in ("ROUND_SECONDS", "EXACT_SECONDS", "PAIR_SECONDS"):  # read when called
        monkeypatch.setattr(bench, knob, 20.0)
    # an argument: main's default was bound when it was defined, so patching
    # BOUND_SECONDS left each case its 600 s budget (about 50 min in CI)
    record = bench.main(small=True, bound_seconds=20.0)
    figures = record["figures"]
    assert figures["meps_all-visits"]["n_patients"] == 400
    for case in figures.values():
        ug = case["ugaclip"]
        assert ug["verifier_ok"] and case["aclip"]["verifier_ok"]
        assert case["aclip"]["suppressed_codes"] == 0
        for bound in case["lower_bound"].values():
            assert bound["bound"] <= ug["suppressed_codes"]
        base = case["suppression_only"]
        assert "refused" in base or (base["verifier_ok"]
                                     and ug["suppressed_codes"] < base["suppressed_codes"])
    assert record["wall_seconds"] > 0
