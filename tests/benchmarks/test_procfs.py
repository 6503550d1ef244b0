"""The benchmarks' /proc reader: parents, resident memory of a process tree,
and command lines that may still change."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from benchmarks import procfs
from benchmarks.bench_release_scale import TaskSampler, service_class


def test_snapshot_knows_this_process_and_its_parent():
    me = procfs.snapshot()[os.getpid()]
    assert me[0] == os.getppid()
    rss = psutil.Process().memory_info().rss
    assert abs(me[1] - rss) < 0.2 * rss
    times = psutil.Process().cpu_times()
    assert abs(me[2] - (times.user + times.system)) < 0.1


def test_tree_cpu_counts_a_busy_child():
    busy = ("import time\nt = time.process_time()\n"
            "while time.process_time() - t < 1.5: pass\ntime.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", busy])
    try:
        deadline = time.time() + 20
        while time.time() < deadline and procfs.snapshot().get(child.pid, (0, 0, 0))[2] < 1.4:
            time.sleep(0.1)
        procs = procfs.snapshot()
        assert 1.4 <= procfs.tree_cpu(procs, child.pid) < 3
        assert procfs.tree_cpu(procs, os.getpid()) >= procs[os.getpid()][2] + 1.4
        assert procfs.descendants(procs, [os.getpid()]) >= {os.getpid(), child.pid}
    finally:
        child.kill()
        child.wait()


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


def test_task_sampler_keys_task_processes_by_instance_id(monkeypatch):
    procs = {10: (1, 100, 1.0), 11: (10, 500, 2.0), 12: (11, 50, 0.5), 13: (10, 70, 0.25),
             14: (1, 10, 3.0)}
    names = {10: "airflow worker -- LocalExecutor: <idle>", 11: "airflow worker -- ti-1",
             12: "python child", 13: "airflow worker -- LocalExecutor: run ti-2",
             14: "airflow scheduler"}
    monkeypatch.setattr(procfs, "snapshot", lambda: procs)
    monkeypatch.setattr(procfs, "_cmdline", lambda pid: names[pid])
    sampler = TaskSampler(interval=0.01)
    sampler.start()
    time.sleep(0.05)
    procs[14] = (1, 10, 4.5)  # the scheduler works 1.5 s; the task's child 0.25 s
    procs[12] = (11, 50, 0.75)
    time.sleep(0.05)
    sampler.stop()
    assert sampler.peak == {"ti-1": 550} and sampler.cpu == {"ti-1": 2.75}
    first, last = sampler.services[0][1], sampler.services[-1][1]
    assert first == {"executor": 0.0, "scheduler": 0.0}  # the first pass is the baseline
    assert last == {"executor": 0.0, "scheduler": 1.5}  # the task's child is not a service
    assert sampler.services_between(sampler.services[0][0], sampler.services[-1][0]) == \
        {"executor": 0.0, "scheduler": 1.5}


def test_service_classes():
    assert service_class("airflow worker -- LocalExecutor: <idle>") == "executor"
    assert service_class("/venv/bin/python /venv/bin/airflow scheduler") == "scheduler"
    assert service_class("postgres: postgres airflow_scale [local] idle") == "postgres"
    assert service_class("bash") is None
