"""Host probe: the speed-up this machine gives the screening stage's work
without Airflow, the reference for the scale benchmark's parallelism-2 figure.

``python -m benchmarks.bench_stage_ceiling [--members 113000] [--rounds 5]``

The scale benchmark (``bench_release_scale``) screens the 113k warehouse in
six member ranges, one Airflow task each (seed 004 section 2, per range as
``deid.screening`` plans them).  This probe stages the same ranges once
(extract and plan, in this process) and then screens every range in a fresh
Python process of its own, which imports ``deid.steps`` and runs
``steps.screen_batch``: first one process at a time, then ``--parallelism``
at a time (a slot that frees starts the next range at once, as a
LocalExecutor worker would).  Rounds alternate the two.

What the ratio leaves out is what only Airflow adds: the scheduler, API
server, executor and metadata database sharing the cores, the hand-off from
one task to the next (bench_exit_race: the supervisor missing exits on busy
cores).  What it adds is a fresh interpreter's start-up, where an Airflow
task is forked from its worker and parses the DAG file instead.

Figures: each round's seconds one at a time and in parallel and their
ratio, the median ratio, and the children's mean Arrow threads, import,
screening and CPU seconds in each mode.  A child that fails is an error, and
every round and mode must remove as many members from each range.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack

from benchmarks.harness import run_benchmark

POLICY = "hhp-2012-v1"  # the scale benchmark's screening policy
RUN = ("stage_ceiling", "r1")  # staging of this probe, removed at the end


def stage(members: int, seed: int, batch_members: int) -> int:
    """The extract and the screening ranges in staging; the number of ranges."""
    from benchmarks.bench_release_scale import (
        SPECS,
        ensure_warehouse,
        setup_environment,
    )

    spec = SPECS["disassociation"]
    if f"screening_policy: {POLICY}" not in spec.file():
        raise RuntimeError(f"the scale benchmark no longer screens with {POLICY}")
    setup_environment(spec)
    ensure_warehouse(members, seed)
    from deid import steps

    run = steps.Run(*RUN)
    steps.prepare(run)
    steps.extract(run, "TRUE")
    return len(steps.screen_plan(run, POLICY, batch_members, "TRUE"))


def child(index: int) -> None:
    """One range in this fresh process; its timings as JSON on stdout."""
    t0 = time.perf_counter()
    from deid import steps

    t1 = time.perf_counter()
    out = steps.screen_batch(steps.Run(*RUN), POLICY, {"index": index})
    t2 = time.perf_counter()
    import pyarrow as pa

    print(json.dumps({**out, "threads": pa.cpu_count(), "import_s": round(t1 - t0, 3),
                      "screen_s": round(t2 - t1, 3), "cpu_s": round(sum(os.times()[:2]), 3)}),
          flush=True)


def _start(index: int, out, err) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "benchmarks.bench_stage_ceiling",
                             "--child", str(index)], stdout=out, stderr=err)


def _text(file) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


def _report(index: int, proc: subprocess.Popen, out, err) -> dict:
    """The exited child's report (its output went to files, which never fill
    up and stall it the way a pipe nobody reads does)."""
    code = proc.wait()
    text, errors = _text(out), _text(err)
    if code != 0:
        raise RuntimeError(f"range {index} failed (exit {code}): {errors[-2000:]}")
    lines = text.strip().splitlines()
    if not lines:
        raise RuntimeError(f"range {index} exited without its report: {errors[-2000:]}")
    return json.loads(lines[-1])


def screen_all(n: int, slots: int) -> tuple[float, list[dict]]:
    """Every range screened, ``slots`` processes at a time: (seconds, their reports).
    A child's exit is seen on its pidfd (other children of this process, such
    as an embedded PostgreSQL, are not waited for); on an error the children
    still running are killed."""
    if slots < 1:
        raise ValueError(f"at least one process at a time, not {slots}")
    pending, running, done, unfinished = list(range(n)), {}, {}, []
    t0 = time.perf_counter()
    with ExitStack() as files:
        try:
            while pending or running:
                while pending and len(running) < slots:
                    i = pending.pop(0)
                    out, err = (files.enter_context(tempfile.TemporaryFile()) for _ in range(2))
                    unfinished.append(proc := _start(i, out, err))
                    running[os.pidfd_open(proc.pid)] = (i, proc, out, err)
                ready, _, _ = select.select(list(running), [], [])
                for fd in ready:
                    os.close(fd)
                    i, proc, out, err = running.pop(fd)
                    unfinished.remove(proc)
                    done[i] = _report(i, proc, out, err)
        finally:
            for fd in running:
                os.close(fd)
            for proc in unfinished:
                proc.kill()
                proc.wait()
    return time.perf_counter() - t0, [done[i] for i in range(n)]


def _means(reports: list[dict]) -> dict:
    return {key: round(statistics.mean(r[key] for r in reports), 3)
            for key in ("threads", "import_s", "screen_s", "cpu_s")}


def measure(members: int, seed: int, batch_members: int, slots: int, rounds: int) -> dict:
    n = stage(members, seed, batch_members)
    from deid import steps

    try:
        if n < 1:
            raise RuntimeError("the screening plan has no range: nothing to measure")
        runs, removed = [], set()
        for _ in range(rounds):
            one, serial = screen_all(n, 1)
            many, parallel = screen_all(n, slots)
            for reports in (serial, parallel):
                removed.add(tuple(r["members_removed"] for r in reports))
            runs.append({"one_at_a_time_s": round(one, 3), "parallel_s": round(many, 3),
                         "speedup": round(one / many, 3),
                         "one_at_a_time": _means(serial), "parallel": _means(parallel)})
    finally:
        steps.cleanup(steps.Run(*RUN))
    if len(removed) != 1:
        raise RuntimeError(f"the ranges removed different members from run to run: {removed}")
    return {"ranges": n, "slots": slots, "members_removed": sum(removed.pop()),
            "median_speedup": statistics.median(r["speedup"] for r in runs), "rounds": runs}


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=113_000)
    parser.add_argument("--seed", type=int, default=2008)
    parser.add_argument("--screen-batch", type=int, default=20_000, help="members per range")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return child(args.child)
    params = {"members": args.members, "seed": args.seed, "screen_batch_members":
              args.screen_batch, "parallelism": args.parallelism, "rounds": args.rounds}
    return run_benchmark("stage_ceiling", lambda: measure(
        args.members, args.seed, args.screen_batch, args.parallelism, args.rounds),
        sample_interval=1.0, dataset=f"synthetic warehouse, {args.members} members "
        f"(seed {args.seed}), screening ranges of {args.screen_batch}", params=params)


if __name__ == "__main__":
    main()
