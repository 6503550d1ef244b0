"""The exit-race probe: its cases, and that it tells a child still alive after
its sockets closed from one that had exited (the shares are the host's)."""

from __future__ import annotations

import os

import pytest

from benchmarks import bench_exit_race


def test_a_child_that_outlives_its_sockets_is_caught():
    late, threads = bench_exit_race.one_exit(1, threads=False, hold=True)
    assert late and threads == 1


def test_a_failing_child_is_an_error_not_a_sample(monkeypatch):
    def fail(*args):
        raise MemoryError("no room")

    monkeypatch.setattr(bench_exit_race, "_start_threads", fail)
    with pytest.raises(RuntimeError, match="MemoryError: no room"):
        bench_exit_race.one_exit(1, threads=True)


def test_probe_reports_every_case_with_the_childs_threads():
    out = bench_exit_race.measure(2, 1)
    cases = out["cases"]
    assert set(cases) == {"idle_cores_one_thread", "idle_cores_threads",
                          "busy_cores_one_thread", "busy_cores_threads"}
    for case in cases.values():
        assert case["exits"] == 2 and 0 <= case["not_reapable_at_eof"] <= 2
    assert cases["idle_cores_one_thread"]["child_threads"] == 1
    if len(os.sched_getaffinity(0)) > 1:  # Arrow's CPU pool has one thread per core
        assert cases["idle_cores_threads"]["child_threads"] > 1
