"""The MedCo benchmark still runs (on 600 MEPS patients) and its releases verify."""

from __future__ import annotations

import json

import pytest

from benchmarks import harness
from benchmarks.bench_medco import main


@pytest.mark.datasets
def test_bench_medco_small(datasets_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    record = main(small=True)
    assert json.loads((tmp_path / "medco_small.json").read_text())["figures"] == record["figures"]
    figures = record["figures"]
    assert figures["patients"] == 600
    run = figures["meps_a20_k2"]
    assert run["verdict_ok"], run["violations"]
    assert run["clusters_verdict_ok"] and run["n_dummies"] > 0
    assert run["real_ratio"] >= run["planned_ratio"] - 1e-3
    assert run["real_ratio"] >= run["ratio_bound_profiles"] - 1e-3
    assert run["ratio_bound_profiles_duplicated"] >= run["ratio_bound_profiles"] - 1e-3
    assert run["ratio_bound_profiles"] >= run["ratio_bound_any_profile"] - 1e-3
