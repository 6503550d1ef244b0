"""Scale benchmark (issue #7): a disassociation release (k=5, m=2) end to end on
the synthetic warehouse, run by a real Airflow (``airflow standalone``,
LocalExecutor) with a given parallelism; ``--method hhp`` runs the HHP claims
release instead (its lattice search mapped over the lattice's parts).

``python -m benchmarks.bench_release_scale --members 113000 --parallelism 2``

- The embedded warehouse under ``var/bench_scale`` is filled with the seeded
  generator (``anonymizers.synthetic``) at ``--members`` members, unless it
  already holds exactly that many.
- Baselines first, with nothing else running: plain ``COPY (extract query)
  TO`` a file, and plain ``COPY FROM`` a file of the release's rows (after
  the run) into tables of the same shape.
- Airflow keeps its metadata in a database of its own on the warehouse's
  PostgreSQL server (``metadata_url``), as a production deployment does.
- The release file (extract -> HHP screening per member range -> PPE ->
  HORPART plan -> VERPART/refining per batch -> combine -> measure ->
  validate -> report -> load) is triggered through the REST API; a sampler
  reads the resident memory and CPU time of every task process (Airflow
  titles them ``airflow worker -- <task instance id>``) and its children,
  and the CPU time of Airflow's other processes and PostgreSQL, every 0.5 s
  (the whole process tree once a second), from ``/proc`` (``procfs``:
  sampling costs CPU the tasks share).
- Figures: the run's wall time, each task's duration, peak memory and CPU
  seconds, the other processes' CPU seconds during each stage, each
  stage's span (first start to last end of its mapped tasks), extract and
  load throughput against the baselines, and a fingerprint of every release
  table (to show that runs with different parallelism release the same).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.harness import run_benchmark

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "var" / "bench_scale"


@dataclass(frozen=True)
class Spec:
    """One release the benchmark can run: its file, release-table suffixes and
    the method's figures in the audit row."""

    release: str
    blocks: tuple[str, ...]
    method_file: str

    @property
    def dag(self) -> str:
        return f"deid_{self.release}"

    def file(self) -> str:
        return (f"name: {self.release}\nversion: 1\nschedule: null\nscope: \"TRUE\"\n"
                f"{self.method_file}thresholds: {{}}\ndestination:\n  table: {self.release}\n")


SPECS = {
    "disassociation": Spec("scale_disassociation", ("clusters", "record_chunks", "item_chunks",
                                                    "shared_chunks", "shared_chunk_clusters"),
                           "description: Scale benchmark (issue 7) - disassociation k=5 m=2 "
                           "after HHP screening.\nscreening_policy: hhp-2012-v1\n"
                           "method: disassociation\nparams:\n  k: 5\n  m: 2\n  seed: 7007\n"
                           "  utility_policy: icd9-level-1\n"),
    "hhp": Spec("scale_hhp", ("members", "claims"),
                "description: Scale benchmark (issue 7) - HHP claims release.\nmethod: hhp\n"
                "params:\n  k: 5\n  seed: 7007\n  max_sup: 0.05\n  p_max: 5\n"),
}


def setup_environment(spec: Spec) -> None:
    """The project's DAGs and plugins, and a warehouse and releases of the benchmark's own."""
    if str(ROOT / "plugins") not in sys.path:
        sys.path.insert(0, str(ROOT / "plugins"))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "plugins")])
    os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(ROOT / "dags"))
    os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(ROOT / "plugins"))
    os.environ["DEID_VAR_DIR"] = str(HOME)
    releases = HOME / "releases"
    releases.mkdir(parents=True, exist_ok=True)
    for old in releases.glob("*.yaml"):  # one release (one DAG) per Airflow home
        old.unlink()
    (releases / f"{spec.release}.yaml").write_text(spec.file())
    os.environ["DEID_RELEASES_DIR"] = str(releases)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")


def ensure_warehouse(members: int, seed: int) -> dict:
    """Fill the source tables with ``members`` generated members (if needed)."""
    from tools.demo_data import load_synthetic, source_counts
    from deid.warehouse import ensure_schemas

    ensure_schemas()
    counts = source_counts()
    if counts["beneficiary_summary"] == 3 * members:  # one summary row per year
        return {"loaded_now": False, **counts}
    t0 = time.perf_counter()
    counts = load_synthetic(members, seed, replace=True)
    from deid.warehouse import connect
    with connect() as conn, conn.cursor() as cur:
        cur.execute("ANALYZE")
    return {"loaded_now": True, "load_seconds": round(time.perf_counter() - t0, 1), **counts}


def forget_releases(spec: Spec) -> int:
    """Remove the benchmark release's published history from the benchmark's
    own warehouse, so that every run is measured as a first release: a second
    release is also checked against every earlier one (``deid.cross_release``),
    which is a different run to time.  Runs never change history
    (sql/roles.sql); the benchmark's warehouse superuser does it here, and
    only in the embedded warehouse under the benchmark's own directory: an
    Airflow ``warehouse`` connection defined in the environment would point
    it at a real audit trail."""
    from deid.warehouse import connect, embedded_dir, is_embedded

    if not is_embedded() or HOME.resolve() not in embedded_dir().resolve().parents:
        raise RuntimeError("the scale benchmark forgets release history only in its own "
                           f"embedded warehouse under {HOME}; a 'warehouse' connection is "
                           "defined or DEID_VAR_DIR points elsewhere")
    with connect() as conn, conn.cursor() as cur:
        cur.execute("DELETE FROM restricted.release_parts WHERE release_name = %s",
                    (spec.release,))
        cur.execute("DELETE FROM restricted.release_history WHERE release_name = %s",
                    (spec.release,))
        return cur.rowcount


def plain_copy_out() -> dict:
    """``COPY (extract query) TO STDOUT`` into a file: the extract's baseline."""
    from deid.extract import extract_query
    from deid.warehouse import connect

    path = HOME / "plain_extract.csv"
    t0 = time.perf_counter()
    with connect() as conn, conn.cursor() as cur, open(path, "w") as f:
        cur.copy_expert(f"COPY ({extract_query()}) TO STDOUT WITH (FORMAT csv)", f)
    seconds = time.perf_counter() - t0
    with open(path, "rb") as f:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    path.unlink()
    return {"rows": rows, "seconds": round(seconds, 2), "rows_per_s": round(rows / seconds)}


def plain_copy_in(spec: Spec) -> dict:
    """The release's rows, written out, then ``COPY FROM`` a file into a table
    of the same shape: the load's baseline.  The table is a plain one created
    in the same transaction, as the load's build tables are (a temporary
    table would skip the write-ahead log the load pays for); it is rolled
    back."""
    from deid.warehouse import connect

    rows = seconds = 0.0
    with connect() as conn, conn.cursor() as cur:
        for block in spec.blocks:
            path = HOME / f"plain_{block}.csv"
            with open(path, "w") as f:
                cur.copy_expert(f"COPY release.{spec.release}_{block} TO STDOUT WITH (FORMAT csv)", f)
            cur.execute(f"CREATE TABLE release_build.plain_{block} "
                        f"(LIKE release.{spec.release}_{block})")
            t0 = time.perf_counter()
            with open(path) as f:
                cur.copy_expert(f"COPY release_build.plain_{block} FROM STDIN WITH (FORMAT csv)",
                                f)
            seconds += time.perf_counter() - t0
            cur.execute(f"SELECT count(*) FROM release_build.plain_{block}")
            rows += cur.fetchone()[0]
            path.unlink()
        conn.rollback()
    return {"rows": int(rows), "seconds": round(seconds, 2), "rows_per_s": round(rows / seconds)}


def fingerprints(spec: Spec) -> dict:
    """md5 of each release table's rows in a canonical order."""
    from deid.warehouse import connect

    out = {}
    with connect() as conn, conn.cursor() as cur:
        for block in spec.blocks:
            cur.execute(f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY "
                        f"t::text), '')) FROM release.{spec.release}_{block} t")
            n, digest = cur.fetchone()
            out[block] = f"{n} rows, md5 {digest}"
    out["all"] = hashlib.sha256("".join(out.values()).encode()).hexdigest()[:16]
    return out


#: title fragment -> class of a process that is not a task, for the CPU
#: spent beside the tasks (first match wins)
SERVICES = (("airflow worker -- LocalExecutor", "executor"), ("scheduler", "scheduler"),
            ("api_server", "api_server"), ("api-server", "api_server"),
            ("dag-processor", "dag_processor"), ("dag_processor", "dag_processor"),
            ("triggerer", "triggerer"), ("serve-logs", "serve_logs"), ("postgres", "postgres"),
            ("bench_release_scale", "benchmark"))


class TaskSampler(threading.Thread):
    """Every 0.5 s from ``/proc`` (``benchmarks.procfs``): the peak resident
    set and the CPU seconds of every Airflow task process with its children
    (``peak``, ``cpu``: task instance id -> bytes, seconds), and the CPU
    seconds used by the other processes by class (``SERVICES``) as a
    timeline (``services``: (time, {class: cumulative seconds})).

    A task process is forked from its supervisor (titled ``airflow worker --
    LocalExecutor: ...``) and renames itself ``airflow worker -- <task
    instance id>`` once started, so titles of the first kind are read again.
    A task's CPU is its largest sample: up to one interval (0.5 s) of its
    last work is not seen, at any parallelism alike.
    """

    PREFIX = "airflow worker -- "

    def __init__(self, interval: float = 0.5):
        super().__init__(daemon=True)
        self.peak: dict[str, int] = {}
        self.cpu: dict[str, float] = {}
        self.services: list[tuple[float, dict[str, float]]] = []
        self.interval = interval
        self._halt = threading.Event()

    def run(self):
        from benchmarks import procfs

        titles = procfs.Titles(unsettled=(self.PREFIX + "LocalExecutor",))
        seen: dict[tuple[int, int], float] | None = None
        total: dict[str, float] = {}
        while not self._halt.is_set():
            procs = procfs.snapshot()
            in_tasks = self._tasks(procs, titles)
            now: dict[tuple[int, int], float] = {}
            for pid, (ppid, _, cpu) in procs.items():
                cls = None if pid in in_tasks else service_class(titles.of(pid, ppid))
                if cls:
                    now[(pid, ppid)] = cpu
                    # the first pass only sets the baseline; a process born since
                    # the last pass counts from zero
                    grew = 0.0 if seen is None else cpu - seen.get((pid, ppid), 0.0)
                    total[cls] = total.get(cls, 0.0) + grew
            seen = now
            self.services.append((time.time(), dict(total)))
            titles.forget_all_but(procs)
            self._halt.wait(self.interval)

    def _tasks(self, procs, titles) -> set[int]:
        """Record each task tree's memory and CPU; the pids in those trees."""
        from benchmarks import procfs

        roots = {}
        for pid, (ppid, *_) in procs.items():
            title = titles.of(pid, ppid)
            if title.startswith(self.PREFIX) and "LocalExecutor" not in title:
                roots[pid] = title[len(self.PREFIX):].split()[0]
        for pid, ti in roots.items():
            self.peak[ti] = max(self.peak.get(ti, 0), procfs.tree_rss(procs, pid))
            self.cpu[ti] = max(self.cpu.get(ti, 0.0), procfs.tree_cpu(procs, pid))
        return procfs.descendants(procs, roots)

    def services_between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds of each service class between two times (from the
        samples nearest before each)."""
        def at(t):
            before = [totals for when, totals in self.services if when <= t]
            return before[-1] if before else {}
        a, b = at(start), at(end)
        return {cls: round(b[cls] - a.get(cls, 0.0), 1) for cls in sorted(b)}

    def stop(self):
        self._halt.set()
        self.join()


def service_class(title: str) -> str | None:
    return next((cls for fragment, cls in SERVICES if fragment in title), None)


def metadata_url(name: str) -> str:
    """Airflow's metadata database ``name`` on the warehouse's PostgreSQL server
    (created if missing), as a SQLAlchemy URL.

    PostgreSQL, as in production (docker-compose.yml), rather than the
    standalone's SQLite: SQLite takes one writer at a time, and the scheduler,
    the API server and every running task's heartbeat (once a second) write.
    At 113k the run took 275 s at parallelism 1 and 249 s at 2 on SQLite,
    259 s and 240 s on PostgreSQL.
    """
    import psycopg2.extensions
    from deid.warehouse import connect, dsn
    from sqlalchemy.engine import URL

    if not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", name):
        raise ValueError(f"metadata database name {name!r} is not a plain lower-case name")
    with connect(autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        if cur.fetchone() is None:
            cur.execute(f"CREATE DATABASE {name}")
    parts = psycopg2.extensions.parse_dsn(dsn())
    query = {k: str(parts[k]) for k in ("host", "port") if parts.get(k)}
    return URL.create("postgresql+psycopg2", username=parts.get("user") or None,
                      password=parts.get("password") or None, database=name,
                      query=query).render_as_string(hide_password=False)


def airflow_run(spec: Spec, parallelism: int, conf: dict) -> dict:
    from tools.airflow_server import standalone

    home = HOME / f"airflow_{spec.release}_p{parallelism}"
    env = {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_url(home.name),
           "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
           "AIRFLOW__CORE__PARALLELISM": str(parallelism),
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
           "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
           "AIRFLOW_VAR_DEID_TOKEN_KEY": "bench-key-not-secret"}
    dag = spec.dag
    sampler = TaskSampler()
    with standalone(home, env) as server:
        token = server.token()
        server.wait_for_dag(dag, token)
        _fail_stale_runs(server, dag, token)
        sampler.start()
        try:
            run_id = server.trigger(dag, conf, token)
            run = server.wait_for_run(dag, run_id, timeout=3600)
        finally:
            sampler.stop()
        tis = server.api("GET", f"/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances"
                         "?limit=1000")["task_instances"]
        xcom = {t: _value(server.api("GET", f"/api/v2/dags/{dag}/dagRuns/{run_id}/"
                                        f"taskInstances/{t}/xcomEntries/return_value"))
                for t in ("extract", "load") if run["state"] == "success"}
    return {"run": run, "tis": tis, "sampler": sampler, "xcom": xcom}


def _fail_stale_runs(server, dag: str, token: str) -> None:
    """A run left running by an interrupted benchmark would compete for the
    workers (its staging is gone): mark it failed first."""
    runs = server.api("GET", f"/api/v2/dags/{dag}/dagRuns?state=running&state=queued",
                      token=token)["dag_runs"]
    for run in runs:
        server.api("PATCH", f"/api/v2/dags/{dag}/dagRuns/{run['dag_run_id']}",
                   {"state": "failed"}, token=token)


def _value(entry: dict):
    value = entry["value"]
    return json.loads(value) if isinstance(value, str) else value


def _seconds(a: str, b: str) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


def handoff_gaps(spans: list[tuple[float, float]], slots: int) -> list[float]:
    """Seconds from the end of one of a stage's task instances to the start
    of the instance that took its worker slot, for every instance after the
    first ``slots`` (start order; each takes the slot that freed first).
    Only for a stage that held the workers alone: a task of another stage
    in a slot would make a gap of its running time (``stages`` checks).

    Airflow records a task's end when the task reports its state, before its
    process has exited, so a gap holds the supervisor noticing the exit, the
    executor handing the slot on and the next task's start-up: about 0.05 s,
    or a second more when the supervisor misses the exit (it then waits for
    its next heartbeat, ``[workers] min_heartbeat_interval``)."""
    spans = sorted(spans)
    free = sorted(end for _, end in spans[:slots])
    gaps = []
    for start, end in spans[slots:]:
        gaps.append(round(start - free.pop(0), 2))
        bisect.insort(free, end)
    return gaps


def _overlapped(task: str, spans: dict, start: float, end: float) -> bool:
    """Whether a task instance of another stage ran during ``task``'s span."""
    return any(a < end and b > start
               for other, runs in spans.items() if other != task for a, b in runs)


def stages(tis: list, sampler, slots: int = 1) -> dict:
    """Per task id: instances, summed and spanned seconds, peak memory, the
    tasks' CPU seconds, the services' CPU seconds during the span and, for a
    stage of more instances than ``slots`` (the parallelism) during whose
    span no other stage's task ran, the hand-off gaps (``handoff_gaps``)."""
    from datetime import datetime

    out: dict = {}
    spans: dict = {}  # task id -> (start, end) epoch seconds of each instance
    for ti in tis:
        if not ti.get("start_date") or not ti.get("end_date") or ti["state"] == "skipped":
            continue
        s = out.setdefault(ti["task_id"], {"instances": 0, "task_cpu_seconds": 0.0,
                                           "peak_mb": 0.0})
        s["instances"] += 1
        s["task_cpu_seconds"] += sampler.cpu.get(ti["id"], 0.0)
        s["peak_mb"] = max(s["peak_mb"], sampler.peak.get(ti["id"], 0) / 2**20)
        spans.setdefault(ti["task_id"], []).append(
            tuple(datetime.fromisoformat(ti[k]).timestamp() for k in ("start_date", "end_date")))
    for task, s in out.items():
        runs = spans[task]
        start, end = min(a for a, _ in runs), max(b for _, b in runs)
        if s["instances"] > slots and not _overlapped(task, spans, start, end):
            s["handoff_gaps"] = handoff_gaps(runs, slots)
        s["first_start"], s["last_end"] = round(start, 2), round(end, 2)
        s["span_seconds"] = round(end - start, 1)
        s["service_cpu_seconds"] = sampler.services_between(start, end)
        s["task_seconds"] = round(sum(b - a for a, b in runs), 1)
        s["task_cpu_seconds"] = round(s["task_cpu_seconds"], 1)
        s["peak_mb"] = round(s["peak_mb"])
    return dict(sorted(out.items(), key=lambda kv: kv[1]["span_seconds"], reverse=True))


def audit_figures(spec: Spec) -> dict:
    from deid.warehouse import connect

    with connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT outcome, input_rows, output_rows, metrics, verdicts FROM "
                    "audit.release_runs WHERE release_name = %s ORDER BY ended_at DESC LIMIT 1",
                    (spec.release,))
        outcome, n_in, n_out, metrics, verdicts = cur.fetchone()
    out = {"outcome": outcome, "input_rows": n_in, "output_rows": n_out,
           "verdicts": {v["property"]: v["ok"] for v in verdicts["verdicts"]}}
    if "hhp" in metrics:
        h = metrics["hhp"]
        return {**out, **{k: h.get(k) for k in ("risk", "information_loss", "nodes_evaluated",
                                               "lattice_parts", "chosen_node",
                                               "members_removed_by_screening")}}
    dis = metrics.get("disassociation", {})
    return {**out, "members_after_screening": dis.get("n_records"),
            "members_removed_by_screening": (metrics.get("screen") or {}).get("members_removed"),
            "privacy_constraints": (metrics.get("ppe") or {}).get("constraints"),
            "clusters": dis.get("n_clusters"), "are_w2": dis.get("are_w2"),
            "mre_share_in_-5_5": dis.get("mre_share_in_-5_5")}


def measure(spec: Spec, members: int, parallelism: int, conf: dict, seed: int) -> dict:
    warehouse = ensure_warehouse(members, seed)
    warehouse["earlier_releases_forgotten"] = forget_releases(spec)
    copy_out = plain_copy_out()
    result = airflow_run(spec, parallelism, conf)
    run = result["run"]
    figures = {"warehouse": warehouse, "run_state": run["state"],
               "run_wall_seconds": round(_seconds(run["start_date"], run["end_date"]), 1),
               "stages": stages(result["tis"], result["sampler"], parallelism)}
    figures["max_task_peak_mb"] = max(s["peak_mb"] for s in figures["stages"].values())
    if run["state"] != "success":
        return figures
    extract, load = result["xcom"]["extract"], result["xcom"]["load"]
    copy_in = plain_copy_in(spec)
    figures["extract"] = {"rows": extract["rows"], "seconds": extract["seconds"],
                          "rows_per_s": round(extract["rows"] / extract["seconds"]),
                          "plain_copy": copy_out,
                          "ratio_to_plain_copy": round(copy_out["seconds"] / extract["seconds"]
                                                       * extract["rows"] / copy_out["rows"], 3)}
    figures["load"] = {"rows": load["rows"], "copy_seconds": load["copy_seconds"],
                       "rows_per_s": round(load["rows"] / load["copy_seconds"]),
                       "plain_copy": copy_in,
                       "ratio_to_plain_copy": round(copy_in["seconds"] / load["copy_seconds"]
                                                    * load["rows"] / copy_in["rows"], 3)}
    figures["release"] = audit_figures(spec)
    figures["fingerprints"] = fingerprints(spec)
    return figures


def result_name(method: str, members: int, parallelism: int, round_: int = 1,
                window: str | None = None) -> str:
    """``release_scale[_hhp]_<members/1000>k_p<parallelism>[_r<round>]`` (no
    suffix for the first round)."""
    prefix = "release_scale_hhp" if method == "hhp" else "release_scale"
    return (f"{prefix}_{members // 1000}k_p{parallelism}" + (f"_w{window}" if window else "")
            + (f"_r{round_}" if round_ > 1 else ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=113_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024, help="clusters per batch")
    parser.add_argument("--screen-batch", type=int, default=20_000, help="members per range")
    parser.add_argument("--seed", type=int, default=2008)
    parser.add_argument("--method", choices=sorted(SPECS), default="disassociation")
    parser.add_argument("--lattice-parts-per-task", type=int, default=1,
                        help="HHP: lattice parts per search task")
    parser.add_argument("--refine-window", default=None,
                        help="disassociation: refine_window in the release file, a number of "
                             "clusters or 'all' (one window); default: the method's")
    parser.add_argument("--round", type=int, default=1,
                        help="a repeat of the same run: results named ..._r<round> after the first")
    args = parser.parse_args(argv)
    if args.round < 1:
        parser.error(f"--round must be at least 1, got {args.round}")
    spec = SPECS[args.method]
    if args.refine_window is not None:
        window = "null" if args.refine_window == "all" else int(args.refine_window)
        spec = replace(spec, method_file=f"{spec.method_file}  refine_window: {window}\n")
    setup_environment(spec)
    if args.method == "hhp":
        conf, params = {"lattice_parts_per_task": args.lattice_parts_per_task}, {"k": 5}
    else:
        conf = {"batch_size": args.batch_size, "screen_batch_members": args.screen_batch}
        params = {"k": 5, "m": 2}
    name = result_name(args.method, args.members, args.parallelism, args.round,
                       args.refine_window)
    record = run_benchmark(name, lambda: measure(spec, args.members, args.parallelism, conf,
                                                 args.seed), sample_interval=1.0,
                           dataset=f"synthetic DE-SynPUF-shaped warehouse, {args.members} "
                           f"members (seed {args.seed})", executor="LocalExecutor",
                           airflow_metadata="PostgreSQL (warehouse server)",
                           parallelism=args.parallelism,
                           method=args.method, params={**params, **conf},
                           refine_window=args.refine_window or "method default")
    return 0 if record["figures"]["run_state"] == "success" else 1


if __name__ == "__main__":
    raise SystemExit(main())
