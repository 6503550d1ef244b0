"""The HHP benchmark still runs, on 1,500 synthetic members (no real data needed)."""

from __future__ import annotations

import json

from benchmarks import harness
from benchmarks.bench_hhp import SMALL_MEMBERS, main


def test_small_benchmark_runs_and_verifies(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    record = main(small=True)
    written = json.loads((tmp_path / "hhp_small.json").read_text())
    fig = record["figures"]
    assert written["figures"]["chosen_node"] == fig["chosen_node"]
    assert record["n_members"] == SMALL_MEMBERS
    assert 0.9 * SMALL_MEMBERS < fig["members_in"] <= SMALL_MEMBERS  # some draw no claim
    assert fig["verified"] and not fig["violations"]
    assert fig["risk"] <= record["config"]["max_sup"]
    assert fig["nodes_evaluated"] >= 1 and fig["seconds_per_node"] > 0
    assert set(fig["qis_used"]) >= {"place_of_service", "specialty", "dsfc"}
