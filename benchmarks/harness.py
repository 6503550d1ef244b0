"""Measure a benchmark: wall time, peak memory of the process tree, machine facts.

Each benchmark script calls ``run_benchmark(name, fn, **meta)`` where ``fn``
returns a dict of quality figures; the record goes to
``benchmarks/results/<name>.json`` and ``make bench`` collects them into
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import resource
import sys
import threading
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = Path(os.environ.get("DEID_DATASETS",
                               Path(__file__).resolve().parents[2] / "shared" / "datasets"))


class _PeakSampler(threading.Thread):
    """Polls the RSS of this process and its descendants every ``interval`` s
    (``benchmarks.procfs``)."""

    def __init__(self, interval: float = 0.05):
        super().__init__(daemon=True)
        self.peak = 0
        self.interval = interval
        self._halt = threading.Event()

    def run(self):
        from benchmarks import procfs
        me = os.getpid()
        while not self._halt.is_set():
            self.peak = max(self.peak, procfs.tree_rss(procfs.snapshot(), me))
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join()


def machine() -> dict:
    import psutil
    pkgs = {}
    for name in ("numpy", "pandas", "scipy", "scikit-learn", "mlxtend", "apache-airflow"):
        try:
            from importlib.metadata import version
            pkgs[name] = version(name)
        except Exception:  # noqa: BLE001 - a missing package is just not listed
            pass
    return {"cores": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "platform": platform.platform(),
            "packages": pkgs}


def run_benchmark(name: str, fn, sample_interval: float = 0.05, **meta) -> dict:
    """Run ``fn()`` once, measured; write and return the result record.  A
    benchmark that starts many processes samples less often (walking the
    process tree costs CPU that its own tasks would miss)."""
    sampler = _PeakSampler(sample_interval)
    sampler.start()
    t0 = time.perf_counter()
    figures = fn()
    wall = time.perf_counter() - t0
    sampler.stop()
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record = {"name": name, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "memory_sample_seconds": sample_interval,
              "wall_seconds": round(wall, 3),
              "peak_memory_mb": round(max(sampler.peak, self_peak) / 2**20, 1),
              "machine": machine(), **meta, "figures": figures}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=1, default=str))
    json.dump(record, sys.stdout, indent=1, default=str)
    print()
    return record
