"""``make bench``: run every ``benchmarks/bench_*.py`` in its own process, then
collect ``benchmarks/results/*.json`` into ``benchmarks/RESULTS.md``.

``python -m benchmarks.run_all [name ...]`` runs only the named benchmarks;
``--collect`` only rewrites RESULTS.md from the results already there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def benchmarks() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def run(names: list[str]) -> dict[str, int]:
    codes = {}
    for name in names:
        t0 = time.time()
        print(f"== {name}", flush=True)
        codes[name] = subprocess.call([sys.executable, "-m", f"benchmarks.bench_{name}"],
                                      cwd=HERE.parent)
        print(f"== {name}: exit {codes[name]} in {time.time() - t0:.0f} s", flush=True)
    return codes


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value, default=str)[:300] + "`"
    return str(value)


def flatten(figures: dict, prefix: str = "") -> list[tuple[str, object]]:
    """Nested figures as (dotted.key, value) rows, so that every number is a row."""
    rows = []
    for key, value in figures.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            rows += flatten(value, name)
        else:
            rows.append((name, value))
    return rows


def collect() -> Path:
    records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))
               if not p.stem.endswith("_small")]  # the test suite's smoke runs
    lines = ["# Benchmark results", "",
             "Written by `make bench` (benchmarks/run_all.py) from benchmarks/results/*.json; "
             "each benchmark ran in its own process. Peak memory is the resident set of the "
             "process tree, sampled every 50 ms.", ""]
    for r in records:
        m = r.get("machine", {})
        lines += [f"## {r['name']}", "",
                  f"- date: {r.get('date')}; machine: {m.get('cores')} cores, "
                  f"{m.get('memory_gb')} GB, Python {m.get('python')}; "
                  f"packages: {_fmt(m.get('packages', {}))}",
                  f"- wall time: **{r['wall_seconds']:.2f} s**; peak memory: "
                  f"**{r['peak_memory_mb']:.0f} MB**"]
        for key in sorted(set(r) - {"name", "date", "machine", "wall_seconds",
                                    "peak_memory_mb", "figures"}):
            lines.append(f"- {key}: {_fmt(r[key])}")
        lines += ["", "| figure | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in flatten(r.get("figures") or {})]
        lines.append("")
    out = HERE / "RESULTS.md"
    out.write_text("\n".join(lines) + "\n")
    return out


def main(argv: list[str]) -> int:
    if "--collect" not in argv:
        codes = run([a for a in argv if not a.startswith("-")] or benchmarks())
    else:
        codes = {}
    print(f"wrote {collect()}")
    return 1 if any(codes.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
