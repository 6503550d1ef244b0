"""The disassociation benchmark still runs on a small slice of the real data
and its figures make sense."""

from __future__ import annotations

import pytest

from benchmarks import bench_disassociation


@pytest.mark.datasets
def test_small_benchmark_runs_and_verifies(datasets_dir):
    record = bench_disassociation.main(small=True)
    figures = record["figures"]
    assert figures["meps_unplaced_codes"] == ["-1", "-9"]
    for name in ("meps_k5_m2", "bms_k5_m2"):
        run = figures[name]
        assert run["verifier_ok"], run["verifier_violations"]
        assert run["verifier_checked_sets"] > 0
        assert run["release"]["cluster_size_min"] >= 5
        for mode in ("cluster", "below_k", "one"):
            assert run["utility"][mode]["are_w2"] >= 0
    meps = figures["meps_k5_m2"]
    assert meps["release"]["n_records"] == 400
    assert 0 <= meps["utility"]["one"]["mre_share_in_-5_5"] <= 1
    # a recipient drawing item-chunk supports from 1..|P| over-counts more
    assert meps["utility"]["cluster"]["are_w2"] > meps["utility"]["one"]["are_w2"]
