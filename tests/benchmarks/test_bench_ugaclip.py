"""The UGACLIP benchmark still runs, on 400 MEPS patients, and its release
passes the verifier."""

from __future__ import annotations

import pytest


@pytest.mark.datasets
def test_bench_ugaclip_small(datasets_dir):
    from benchmarks.bench_ugaclip import main

    record = main(small=True)
    figures = record["figures"]
    assert figures["n_patients"] == 400
    for level in ("level1", "level2"):
        assert figures[level]["verifier_ok"], figures[level]["verifier_violations"]
        assert figures[level]["suppressed_codes"] >= 0
    assert record["wall_seconds"] > 0
