"""The LDA benchmark still runs (small input); figures are checked for sense."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_lda


@pytest.fixture(scope="module")
def record():
    rec = bench_lda.main(small=True)
    saved = json.loads((bench_lda.RESULTS / "lda_small.json").read_text())
    assert saved["figures"] == json.loads(json.dumps(rec["figures"], default=str))
    return rec


def test_small_benchmark_runs_and_verifies(record):
    d50 = record["figures"]["d50_like"]
    assert d50["data"]["patients"] == 300
    for alignment in ("a-gs", "baseline"):
        run = d50[alignment]
        assert run["verifier_ok"] and run["min_cluster_size"] >= bench_lda.K
        assert 0 <= run["ilm"] <= 1 and 0 <= run["alm"] <= 1
    assert d50["a-gs"]["ilm"] + d50["a-gs"]["alm"] < d50["baseline"]["ilm"] + d50["baseline"]["alm"]


@pytest.mark.datasets
def test_small_benchmark_on_synpuf(record, datasets_dir):
    syn = record["figures"]["synpuf_testB"]
    assert syn["data"]["patients"] > 10
    assert syn["a-gs"]["verifier_ok"] and syn["baseline"]["verifier_ok"]
