"""The stage-ceiling probe: its scheduling of child processes (never more than
the slots, a slot refilled as soon as it frees, a failed child an error) and,
on a small warehouse, that its children screen every range as the pipeline
does in one process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import bench_stage_ceiling

# a stand-in child: reports the wall-clock span it ran (range 0 runs longest), or
# fails for range 1 when told to; writes more to stderr than a pipe holds
FAKE = ("import json, sys, time; t = time.time()\n"
        "sys.stderr.write('w' * 200_000); time.sleep(1.0 if sys.argv[2] == '0' else 0.2)\n"
        "if sys.argv[2] == '1' and sys.argv[1] != '0': sys.exit(int(sys.argv[1]))\n"
        "print('noise'); print(json.dumps({'start': t, 'end': time.time()}))")


def _fake(code: int):
    def start(index: int, out, err) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", FAKE, str(code), str(index)],
                                stdout=out, stderr=err)
    return start


def _most_at_once(reports: list[dict]) -> int:
    edges = sorted([(r["start"], 1) for r in reports] + [(r["end"], -1) for r in reports])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


@pytest.mark.parametrize("slots", [1, 2])
def test_children_run_at_most_slots_at_a_time(monkeypatch, slots):
    monkeypatch.setattr(bench_stage_ceiling, "_start", _fake(0))
    _, reports = bench_stage_ceiling.screen_all(4, slots)
    assert len(reports) == 4 and _most_at_once(reports) == slots


def test_a_freed_slot_takes_the_next_range_at_once(monkeypatch):
    """Ranges 1 and 2 run one after the other beside the long range 0."""
    monkeypatch.setattr(bench_stage_ceiling, "_start", _fake(0))
    _, reports = bench_stage_ceiling.screen_all(3, 2)
    assert reports[1]["end"] <= reports[2]["start"] < reports[0]["end"]


def test_a_failed_child_is_an_error_naming_its_range(monkeypatch):
    monkeypatch.setattr(bench_stage_ceiling, "_start", _fake(3))
    with pytest.raises(RuntimeError, match="range 1 failed \\(exit 3\\): w+$"):
        bench_stage_ceiling.screen_all(3, 2)


def test_no_slot_is_an_error():
    with pytest.raises(ValueError, match="at least one process at a time, not 0"):
        bench_stage_ceiling.screen_all(2, 0)


def test_other_children_of_the_process_are_left_alone(monkeypatch):
    """An embedded PostgreSQL or a finished helper may be this process's child too:
    it is neither waited for nor reaped."""
    import os

    other = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, other.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        monkeypatch.setattr(bench_stage_ceiling, "_start", _fake(0))
        _, reports = bench_stage_ceiling.screen_all(2, 2)
        assert len(reports) == 2
        # still there to be reaped by its own Popen
        assert os.waitid(os.P_PID, other.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    finally:
        other.wait()


@pytest.mark.warehouse
def test_children_screen_every_range_as_one_process_does(empty_source, monkeypatch):
    from deid import staging, steps
    from tools.demo_data import load_synthetic

    load_synthetic(n_members=150, seed=3)
    reference = steps.Run("stage_ceiling_reference", "r1")
    steps.prepare(reference)
    steps.extract(reference)
    expected = steps.screen(reference, bench_stage_ceiling.POLICY, batch_members=150)

    def small_stage(members, seed, batch_members):
        run = steps.Run(*bench_stage_ceiling.RUN)
        steps.prepare(run)
        steps.extract(run)
        return len(steps.screen_plan(run, bench_stage_ceiling.POLICY, batch_members))

    monkeypatch.setattr(bench_stage_ceiling, "stage", small_stage)
    out = bench_stage_ceiling.measure(150, 3, batch_members=40, slots=2, rounds=1)
    assert out["ranges"] == 4 and out["slots"] == 2
    assert out["members_removed"] == expected["members_removed"] > 0
    (r,) = out["rounds"]
    assert r["speedup"] == pytest.approx(r["one_at_a_time_s"] / r["parallel_s"], rel=1e-2)
    assert not staging.run_dir(*bench_stage_ceiling.RUN, create=False).exists()
    steps.cleanup(reference)


def test_results_quote_the_ceiling_next_to_the_airflow_rounds():
    from benchmarks import run_all

    assert run_all._ceiling(None) == []
    record = {"date": "2026-11-27T06:00:00+00:00", "figures": {
        "ranges": 6, "slots": 2, "median_speedup": 1.8,
        "rounds": [{"speedup": 1.7}, {"speedup": 1.8}, {"speedup": 1.9}]}}
    (line, blank) = run_all._ceiling(record)
    assert "median speed-up **1.8x** over 3 rounds (1.7x to 1.9x)" in line and blank == ""


