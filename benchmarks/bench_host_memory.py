"""Host probe: what a new process pays to touch fresh memory on this machine,
warm and cold, one process and two at a time.

``python -m benchmarks.bench_host_memory [--mb 512] [--rounds 3]``

Every Airflow task is a new process that touches a few hundred MB.  On a
virtual machine whose balloon device takes back free memory (the guest
kernel's free page reporting: this host boots with
``page_reporting.page_reporting_order=11``), memory that stayed free for a
couple of seconds has gone back to the host, and the first touch of each
page is then a fault the host serves.  Such faults cost far more than a
touch of memory another process freed a moment ago ("warm"), and two
processes faulting at once may not get two cores' worth: the scale
benchmark's first wave of two tasks after a single one meets exactly that.

Each round: a process touches ``--mb`` MB and exits, another does the same
at once (warm); after ``IDLE_SECONDS`` of idling, one process (cold); after
as long again, two at once (cold, two), then two at once again (warm, two).
The figures are each case's seconds (for two at once, the slower process;
the median over rounds), every round's seconds per process, and the host's
reporting setting, read from the kernel command line.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import run_benchmark

IDLE_SECONDS = 5.0
TOUCH = ("import sys, time, numpy as np\n"
         "t = time.perf_counter(); a = np.ones({n}); print(time.perf_counter() - t)")


def touch(mb: int, processes: int) -> list[float]:
    """Seconds each of ``processes`` concurrent processes took to fill ``mb`` MB.
    (The sampler of ``run_benchmark`` reads /proc once a second, so that it
    takes little of the cores the processes share.)"""
    code = TOUCH.format(n=mb * 2**20 // 8)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(processes)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a memory-touching process failed: exit codes "
                           f"{[p.returncode for p in procs]}")
    return [round(float(o), 3) for o in outs]


def one_round(mb: int, idle: float) -> dict[str, list[float]]:
    touch(mb, 1)
    out = {"warm_one": touch(mb, 1)}
    time.sleep(idle)
    out["cold_one"] = touch(mb, 1)
    time.sleep(idle)
    out["cold_two"] = touch(mb, 2)
    out["warm_two"] = touch(mb, 2)
    return out


def page_reporting() -> str | None:
    """The ``page_reporting.*`` settings on the kernel command line, if any."""
    try:
        words = Path("/proc/cmdline").read_text().split()
    except OSError:
        return None
    found = [w for w in words if w.startswith("page_reporting.")]
    return " ".join(found) or None


def measure(mb: int, rounds: int, idle: float = IDLE_SECONDS) -> dict:
    results = [one_round(mb, idle) for _ in range(rounds)]
    cases = {case: statistics.median(max(r[case]) for r in results) for case in results[0]}
    return {"mb_per_process": mb, "rounds": rounds, "idle_seconds": idle,
            "kernel_page_reporting": page_reporting(),
            "seconds_median_slowest_process": cases,
            "cold_over_warm_one": round(cases["cold_one"] / cases["warm_one"], 1),
            "all_rounds": results}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true",
                        help="64 MB, one round, 0.2 s idle (tests)")
    args = parser.parse_args(argv)
    mb, rounds, idle = (64, 1, 0.2) if args.small else (args.mb, args.rounds, IDLE_SECONDS)
    return run_benchmark("host_memory_small" if args.small else "host_memory",
                         lambda: measure(mb, rounds, idle), sample_interval=1.0,
                         dataset="none (a host probe)",
                         params={"mb": mb, "rounds": rounds, "idle_seconds": idle})


if __name__ == "__main__":
    main()
