"""The benchmarks' /proc reader: parents, resident memory of a process tree,
and command lines that may still change."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from benchmarks import procfs
from benchmarks.bench_release_scale import TaskMemory


def test_snapshot_knows_this_process_and_its_parent():
    me = procfs.snapshot()[os.getpid()]
    assert me[0] == os.getppid()
    rss = psutil.Process().memory_info().rss
    assert abs(me[1] - rss) < 0.2 * rss


def test_tree_rss_counts_descendants():
    ballast = "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); " \
              "import time; time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", ballast])
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            procs = procfs.snapshot()
            if procs.get(child.pid, (0, 0))[1] > 150 * 2**20:
                break
            time.sleep(0.1)
        own = procs[os.getpid()][1]
        assert procfs.tree_rss(procs, os.getpid()) >= own + 150 * 2**20
        assert procfs.tree_rss(procs, child.pid) == procs[child.pid][1]
        assert procfs.tree_rss({}, os.getpid()) == 0
    finally:
        child.kill()
        child.wait()


def test_titles_are_read_again_while_unsettled(monkeypatch):
    reads = iter(["airflow worker -- LocalExecutor: x", "airflow worker -- 0193-ti", "changed"])
    monkeypatch.setattr(procfs, "_cmdline", lambda pid: next(reads))
    titles = procfs.Titles(unsettled=("airflow worker -- LocalExecutor",))
    assert titles.of(7, 1) == "airflow worker -- LocalExecutor: x"
    assert titles.of(7, 1) == "airflow worker -- 0193-ti"
    assert titles.of(7, 1) == "airflow worker -- 0193-ti"  # settled: not read again
    assert titles.of(7, 2) == "changed"  # same pid, another parent: another process
    titles.forget_all_but([])
    assert titles._seen == {}


def test_task_memory_keys_task_processes_by_instance_id(monkeypatch):
    procs = {10: (1, 100), 11: (10, 500), 12: (11, 50), 13: (10, 70)}
    names = {10: "airflow worker -- LocalExecutor: <idle>", 11: "airflow worker -- ti-1",
             12: "python child", 13: "airflow worker -- LocalExecutor: run ti-2"}
    monkeypatch.setattr(procfs, "snapshot", lambda: procs)
    monkeypatch.setattr(procfs, "_cmdline", lambda pid: names[pid])
    memory = TaskMemory(interval=0.01)
    memory.start()
    time.sleep(0.1)
    memory.stop()
    assert memory.peak == {"ti-1": 550}
