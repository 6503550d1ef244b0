"""The GCCens benchmark still runs, on a small population (no real data needed)."""

from __future__ import annotations

import json

from benchmarks import harness
from benchmarks.bench_gccens import main


def test_small_benchmark_runs_and_verifies(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    record = main(small=True)
    written = json.loads((tmp_path / "gccens_small.json").read_text())
    assert written["figures"]["runs"] == record["figures"]["runs"]
    runs = record["figures"]["runs"]
    assert [(r["k"], r["caps"]) for r in runs] == [(5, 3), (5, "sample maxima"), (25, 10)]
    assert all(r["verified"] and not r["violations"] for r in runs)
    assert record["n_population"] == 3_000 and record["n_sample"] == 60
