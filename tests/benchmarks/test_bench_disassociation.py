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
    assert figures["reconstruction"] == "one" and figures["linking"] == "association"
    for name in ("meps_k5_m2", "bms_k5_m2", "meps_k5_m2_section_policy"):
        run = figures[name]
        assert run["verifier_ok"], run["verifier_violations"]
        assert run["verifier_checked_sets"] > 0
        assert run["release"]["cluster_size_min"] >= 5
        assert run["reconstruction"] == "one" and run["linking"] == "association"
        assert run["utility"]["default"] == run["utility"]["association"]
        # association linking changes which records hold codes, not how many
        assert run["utility"]["association"]["are_w1_size1"] == \
            pytest.approx(run["utility"]["one"]["are_w1_size1"])
    meps = figures["meps_k5_m2"]
    assert meps["release"]["n_records"] == 400
    for mode in ("association", "one", "below_k", "cluster"):
        row = meps["utility"][mode]
        assert row["are_w2"] >= 0 and row["are_w1"] >= 0
        for policy in ("codes", "sections"):
            assert 0 <= row[f"mre_{policy}_share_in_2.5"] <= row[f"mre_{policy}_share_in_5"] <= 1
    # a recipient drawing item-chunk supports from 1..|P| over-counts more than
    # one who puts each item-chunk code on one record
    assert meps["utility"]["cluster"]["are_w2"] > meps["utility"]["one"]["are_w2"]
