"""``make bench``: run every ``benchmarks/bench_*.py`` in its own process, then
collect ``benchmarks/results/*.json`` into ``benchmarks/RESULTS.md``.

``python -m benchmarks.run_all [name ...]`` runs only the named benchmarks;
``--collect`` only rewrites RESULTS.md from the results already there.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.bench_release_scale import result_name

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


# The scale benchmark runs at three sizes; at the largest, parallelism 1 and 2 in
# SPEEDUP_ROUNDS interleaved pairs (one pair's speed-up moved between 1.22x and 2.13x
# from round to round on this shared host, and three rounds' median moved by 0.3x
# between two days of runs on unchanged partitioned code); the HHP release (mapped
# lattice search) at the largest, parallelism 1 and 2.
SPEEDUP_ROUNDS = 5
SCALE_RUNS = [["--members", "10000", "--parallelism", "2"],
              ["--members", "30000", "--parallelism", "2"],
              *[["--members", "113000", "--parallelism", p, "--round", str(r)]
                for r in range(1, SPEEDUP_ROUNDS + 1) for p in ("1", "2")],
              ["--method", "hhp", "--members", "113000", "--parallelism", "1"],
              ["--method", "hhp", "--members", "113000", "--parallelism", "2"]]


def benchmarks() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def run(names: list[str]) -> dict[str, int]:
    codes = {}
    for name in names:
        for args in SCALE_RUNS if name == "release_scale" else [[]]:
            label = " ".join([name, *args])
            t0 = time.time()
            print(f"== {label}", flush=True)
            codes[label] = subprocess.call([sys.executable, "-m", f"benchmarks.bench_{name}",
                                            *args], cwd=HERE.parent)
            print(f"== {label}: exit {codes[label]} in {time.time() - t0:.0f} s", flush=True)
    return codes


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str)
        return "`" + (text if len(text) <= 300 else text[:300] + " …") + "`"
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
             "process tree, sampled every 50 ms (every second for the scale runs).", ""]
    lines += scale_summary({r["name"]: r for r in records})
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


PARTITIONED = ("screen", "disassociation_disassociate")
# mapped stages that share the workers with another stage, and that stage
SIDE_BY_SIDE = {"disassociation_verify_batch": "disassociation_measure"}
HHP_PARTITIONED = ("hhp_search",)
SIZES = (("10k", 10_000), ("30k", 30_000), ("113k", 113_000))


def scale_summary(by_name: dict) -> list[str]:
    """Issue #7's figures from the release_scale runs, as tables."""
    runs = {label: by_name.get(result_name("disassociation", n, 2)) for label, n in SIZES}
    if not any(runs.values()):
        return []
    out = ["## Scale summary (issue #7): disassociation release k=5 m=2, LocalExecutor", "",
           "Stage seconds are the span from the first start to the last end of the stage's "
           "task instances (mapped stages: all batches), from Airflow's task records; memory is "
           "the largest resident set of one task process (with its children).", ""]
    out += _growth(runs)
    out += _memory(runs)
    one, two = (by_name.get(result_name("disassociation", 113_000, p)) for p in (1, 2))
    if one and two:
        out += _speedup(one["figures"], two["figures"], PARTITIONED)
        out += _side_by_side(one["figures"], two["figures"])
        out += _rounds(by_name, PARTITIONED)
        out += _ceiling(by_name.get("stage_ceiling"))
        out += _cpu(by_name, PARTITIONED)
        out += _handoffs(by_name, PARTITIONED)
    one, two = (by_name.get(result_name("hhp", 113_000, p)) for p in (1, 2))
    if one and two:
        out += ["### HHP claims release at 113k: the lattice search mapped over its parts", ""]
        out += _speedup(one["figures"], two["figures"], HHP_PARTITIONED)
        out += [f"- largest task: {two['figures']['max_task_peak_mb']} MB; nodes evaluated "
                f"{two['figures'].get('release', {}).get('nodes_evaluated')} over "
                f"{two['figures'].get('release', {}).get('lattice_parts')} parts", ""]
    return out


def _growth(runs: dict) -> list[str]:
    present = [(label, n) for label, n in SIZES if runs.get(label)]
    stages = sorted({s for label, _ in present for s in runs[label]["figures"]["stages"]})
    head = "| stage | " + " | ".join(f"{label} s" for label, _ in present)
    out = [head + " | growth 10k->113k | n log n growth |",
           "|---" * (len(present) + 3) + "|"]
    first, last = present[0], present[-1]
    nlogn = last[1] * math.log(last[1]) / (first[1] * math.log(first[1]))
    for stage in stages:
        secs = [runs[label]["figures"]["stages"].get(stage, {}).get("span_seconds")
                for label, _ in present]
        growth = secs[-1] / secs[0] if secs[0] and secs[-1] else None
        out.append(f"| {stage} | " + " | ".join(_fmt(x) for x in secs)
                   + f" | {_fmt(growth)} | {nlogn:.3g} |")
    for label, _ in present:
        f = runs[label]["figures"]
        out.append("")
        out.append(f"- {label}: run wall **{f['run_wall_seconds']} s**, largest task "
                   f"**{f['max_task_peak_mb']} MB**, extract/plain COPY "
                   f"{_fmt((f.get('extract') or {}).get('ratio_to_plain_copy'))}, load/plain "
                   f"COPY {_fmt((f.get('load') or {}).get('ratio_to_plain_copy'))}")
    return out + [""]


def _memory(runs: dict) -> list[str]:
    """Each stage's largest task at each size: a mapped stage's task holds one
    batch, so it should stop growing once the batches are full."""
    present = [label for label, _ in SIZES if runs.get(label)]
    stages = {label: runs[label]["figures"]["stages"] for label in present}
    names = sorted({s for label in present for s in stages[label]},
                   key=lambda s: -(stages[present[-1]].get(s, {}).get("peak_mb") or 0))
    out = ["| stage | tasks at " + present[-1] + " | "
           + " | ".join(f"{label} MB" for label in present) + " |",
           "|---" * (len(present) + 2) + "|"]
    for name in names:
        tasks = stages[present[-1]].get(name, {}).get("instances")
        out.append(f"| {name} | {_fmt(tasks or 'n/a')} | " + " | ".join(
            _fmt(stages[label].get(name, {}).get("peak_mb") or "n/a") for label in present)
            + " |")
    return out + ["", "MB: the largest resident set of one of the stage's task processes, "
                  "Airflow's task runner included (which alone holds about 240 MB); n/a: the task ended between two "
                  "samples.", ""]


def _identical(*figures: dict) -> bool:
    """Every run has a release fingerprint, and it is the same one."""
    prints = {f.get("fingerprints", {}).get("all") for f in figures}
    return len(prints) == 1 and None not in prints


def _spans(one: dict, two: dict, stage: str) -> tuple:
    """The stage's span at parallelism 1 and 2, and their ratio (None if one is missing)."""
    a, b = (f["stages"].get(stage, {}).get("span_seconds") for f in (one, two))
    return a, b, (a / b if a and b else None)


def _speedup(one: dict, two: dict, partitioned: tuple[str, ...]) -> list[str]:
    out = ["| partitioned stage at 113k | parallelism 1 s | parallelism 2 s | speed-up |",
           "|---|---|---|---|"]
    for stage in partitioned:
        a, b, up = _spans(one, two, stage)
        out.append(f"| {stage} ({two['stages'].get(stage, {}).get('instances')} tasks) | "
                   f"{_fmt(a)} | {_fmt(b)} | {_fmt(up)} |")
    out += ["", f"- whole run: {one['run_wall_seconds']} s at parallelism 1, "
            f"{two['run_wall_seconds']} s at parallelism 2; release identical: "
            f"**{'yes' if _identical(one, two) else 'NO'}** (fingerprint "
            f"{two.get('fingerprints', {}).get('all')})", ""]
    return out


def _side_by_side(one: dict, two: dict) -> list[str]:
    """A mapped stage that shares the workers with another stage: its own span,
    and the span of both together (first start to last end), at parallelism 1
    and 2; nothing for runs without stage start and end times."""
    rows = []
    for stage, other in SIDE_BY_SIDE.items():
        a, b, up = _spans(one, two, stage)
        both = [_joint_span(f["stages"], (stage, other)) for f in (one, two)]
        if up is None or None in both or not both[1]:
            continue
        rows += [f"| {stage}, its own span | {_fmt(a)} | {_fmt(b)} | {_fmt(up)} |",
                 f"| {stage} and {other} | {_fmt(both[0])} | {_fmt(both[1])} | "
                 f"{_fmt(both[0] / both[1])} |"]
    if not rows:
        return []
    return ["| mapped stage beside another at 113k | parallelism 1 s | parallelism 2 s | "
            "speed-up |", "|---|---|---|---|", *rows, "",
            "At parallelism 2 the other stage holds one worker for part of the mapped "
            "stage's span; together they show what the second worker bought.", ""]


def _joint_span(stages: dict, names: tuple[str, ...]) -> float | None:
    found = [stages.get(n, {}) for n in names]
    if not all("first_start" in s for s in found):
        return None
    return round(max(s["last_end"] for s in found) - min(s["first_start"] for s in found), 1)


def _round_pair(by_name: dict, r: int) -> list:
    """Round ``r``'s 113k disassociation records at parallelism 1 and 2 (None if missing)."""
    return [by_name.get(result_name("disassociation", 113_000, p, r)) for p in (1, 2)]


def _rounds(by_name: dict, partitioned: tuple[str, ...]) -> list[str]:
    """Every paired round at 113k (round 1 is the table above) and the median
    speed-up of each partitioned stage over the rounds that both succeeded;
    nothing when fewer than two rounds have results."""
    pairs = {r: _round_pair(by_name, r) for r in range(1, SPEEDUP_ROUNDS + 1)}
    if sum(all(pair) for pair in pairs.values()) < 2:
        return []
    out = ["| round (p2 run date) | " + " | ".join(f"{s}: p1 s, p2 s, speed-up"
                                                   for s in partitioned)
           + " | release identical |", "|---" * (len(partitioned) + 2) + "|"]
    ups: dict = {s: [] for s in partitioned}
    runs = []
    for r, pair in pairs.items():
        if not all(pair):
            out.append(f"| {r} | no result |")
            continue
        one, two = (record["figures"] for record in pair)
        if {one.get("run_state"), two.get("run_state")} != {"success"}:
            out.append(f"| {r} | run {one.get('run_state')} / {two.get('run_state')} |")
            continue
        runs += [one, two]
        cells = []
        for s in partitioned:
            a, b, up = _spans(one, two, s)
            if up is not None:
                ups[s].append(up)
            cells.append(f"{_fmt(a)}, {_fmt(b)}, **{_fmt(up)}**")
        out.append(f"| {r} ({pair[1].get('date')}) | " + " | ".join(cells)
                   + f" | {'yes' if _identical(one, two) else 'NO'} |")
    medians = [f"{s} **{_fmt(statistics.median(ups[s]))}x** (lowest {_fmt(min(ups[s]))}x)"
               if ups[s] else f"{s} n/a" for s in partitioned]
    out += ["", f"- median speed-up over {len(runs) // 2} rounds: " + ", ".join(medians)
            + f"; one release in every run: **{'yes' if _identical(*runs) else 'NO'}**", ""]
    return out


def _ceiling(record: dict | None) -> list[str]:
    """The screening ranges' speed-up without Airflow (bench_stage_ceiling)."""
    if not record:
        return []
    f = record["figures"]
    ups = [r["speedup"] for r in f["rounds"]]
    return [f"- without Airflow (stage_ceiling below, {record['date']}): the same "
            f"{f['ranges']} screening ranges as plain processes, one and {f['slots']} at a "
            f"time: median speed-up "
            f"**{_fmt(f['median_speedup'])}x** over {len(ups)} rounds ({_fmt(min(ups))}x to "
            f"{_fmt(max(ups))}x): a reference for what the second core gives this stage here, "
            f"with none of Airflow's processes beside it (each process also pays an "
            f"interpreter start-up that a forked task does not).", ""]


def _cpu(by_name: dict, partitioned: tuple[str, ...]) -> list[str]:
    """Where the partitioned stages' time went in each paired round: the tasks'
    CPU seconds, the cores they had (CPU seconds / span) and the CPU seconds
    of every other Airflow and PostgreSQL process during the span; nothing
    for runs without CPU figures."""
    rows = []
    for r in range(1, SPEEDUP_ROUNDS + 1):
        pair = _round_pair(by_name, r)
        for stage in partitioned if all(pair) else ():
            one, two = (rec["figures"]["stages"].get(stage, {}) for rec in pair)
            if "task_cpu_seconds" in one and "task_cpu_seconds" in two:
                rows.append(f"| {r} | {stage} | {_cpu_cells(one)} | {_cpu_cells(two)} | "
                            f"{_fmt(two['task_cpu_seconds'] / one['task_cpu_seconds'])} |")
    if not rows:
        return []
    head = ("| round | partitioned stage | p1: span s, task CPU-s, task cores, other CPU-s | "
            "p2: span s, task CPU-s, task cores, other CPU-s | task CPU-s p2/p1 |")
    note = ("Task CPU-s: user + system time of the stage's task processes (/proc, sampled "
            "every 0.5 s); task cores: task CPU-s / span; other CPU-s: Airflow's services, "
            "the executor's supervisors and PostgreSQL during the span. Speed-up = "
            "(task CPU-s at p1 / task cores at p1) / (task CPU-s at p2 / task cores at p2): "
            "it falls below 2 when the same work costs more CPU-seconds run two at a time, "
            "or when the tasks get fewer than two cores.")
    return [head, "|---|---|---|---|---|", *rows, "", note, ""]


LATE_HANDOFF = 0.5  # seconds; a hand-off takes about 0.05 s when the supervisor sees the exit


def _handoffs(by_name: dict, partitioned: tuple[str, ...]) -> list[str]:
    """How often, in each paired round, a partitioned stage's next task
    started late after one ended (``bench_release_scale.handoff_gaps``), the
    seconds those late hand-offs took and those of all; nothing for runs
    without gaps."""
    rows = []
    for r in range(1, SPEEDUP_ROUNDS + 1):
        pair = _round_pair(by_name, r)
        for stage in partitioned if all(pair) else ():
            gaps = [rec["figures"]["stages"].get(stage, {}).get("handoff_gaps")
                    for rec in pair]
            if all(g is not None for g in gaps):
                rows.append(f"| {r} | {stage} | " + " | ".join(_late(g) for g in gaps) + " |")
    if not rows:
        return []
    note = ("A hand-off: from a task's reported end to the start of the task that took its "
            "worker slot (the supervisor noticing the exit, the worker forking the next task, "
            f"its start-up). A late one took more than {LATE_HANDOFF} s, mostly about a "
            "second: the task supervisor missed the process's exit and waited for its next "
            "heartbeat (`[workers] min_heartbeat_interval`, 1 s here). At parallelism 2 every "
            "hand-off competes for the cores with the task still running in the other slot, "
            "and busy cores are when the supervisor misses exits (exit_race below: how often, "
            "with the cores idle and busy).")
    return ["| round | partitioned stage | p1: late hand-offs, their s, all hand-offs s | "
            "p2: late hand-offs, their s, all hand-offs s |", "|---|---|---|---|", *rows, "",
            note, ""]


def _late(gaps: list[float]) -> str:
    late = [g for g in gaps if g > LATE_HANDOFF]
    return f"{len(late)} of {len(gaps)}, {_fmt(round(sum(late), 2))}, {_fmt(round(sum(gaps), 2))}"


def _cpu_cells(stage: dict) -> str:
    cpu, span = stage["task_cpu_seconds"], stage["span_seconds"]
    return (f"{_fmt(span)}, {_fmt(cpu)}, {_fmt(cpu / span if span else None)}, "
            f"{_fmt(round(sum(stage['service_cpu_seconds'].values()), 1))}")


def main(argv: list[str]) -> int:
    if "--collect" not in argv:
        codes = run([a for a in argv if not a.startswith("-")] or benchmarks())
    else:
        codes = {}
    print(f"wrote {collect()}")
    return 1 if any(codes.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
