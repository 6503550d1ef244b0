"""A release run by the CeleryExecutor on two workers releases what the
LocalExecutor releases (issue 26).

One Airflow (``celery_stack``: metadata in PostgreSQL, a local Redis broker,
the API server and the DAG processor) runs the same disassociation release
twice on a small synthetic warehouse: first with a LocalExecutor scheduler,
then, the scheduler replaced by a CeleryExecutor one, on two ``airflow
celery worker`` processes of one slot each.  The release is the scale
benchmark's (HHP screening per member range, PPE, disassociation; its
verifiers as tasks of their own), on 300 members screened in two ranges: a
mapped stage of two tasks, which the broker deals to both workers at once.
The loaded release tables' fingerprints
(``benchmarks.bench_release_scale.fingerprints``) must be equal, and every
task of the Celery run must have run on one of the two workers, both busy.
"""

from __future__ import annotations

import time

import pytest

from benchmarks.bench_release_scale import SPECS, Spec, fingerprints, metadata_url
from tests.integration import celery_stack as cs

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

MEMBERS, SEED = 300, 26
#: HHP screening in two member ranges: a mapped stage of two tasks
CONF = {"screen_batch_members": 150}
METADATA_DB = "airflow_celery_test"
WORKERS = ("celery_worker_1", "celery_worker_2")
RUN_TIMEOUT = 300
SPEC = Spec("celery_disassociation", SPECS["disassociation"].blocks,
            SPECS["disassociation"].method_file)


@pytest.fixture
def release_dir(tmp_path, monkeypatch):
    """The one release this test's Airflow parses (no other DAG to schedule)."""
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / f"{SPEC.release}.yaml").write_text(SPEC.file())
    monkeypatch.setenv("DEID_RELEASES_DIR", str(releases))
    return releases


@pytest.fixture
def metadata(warehouse):
    """A fresh Airflow metadata database on the warehouse's server."""
    with warehouse.connect(autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {METADATA_DB} WITH (FORCE)")
    return metadata_url(METADATA_DB)


def _run(server, token) -> tuple[dict, list]:
    run_id = server.trigger(SPEC.dag, CONF, token)
    run = server.wait_for_run(SPEC.dag, run_id, timeout=RUN_TIMEOUT)
    tis = server.api("GET", f"/api/v2/dags/{SPEC.dag}/dagRuns/{run_id}/taskInstances?limit=1000",
                     token=token)["task_instances"]
    return run, tis


def _failed(tis: list) -> list:
    return [(t["task_id"], t.get("map_index"), t["state"]) for t in tis
            if t["state"] not in ("success", "skipped")]


def _overlapping_on_two_workers(tis: list) -> list:
    """Pairs of task instances that ran at the same time on different workers."""
    from datetime import datetime

    spans = [(t["hostname"], f"{t['task_id']}[{t['map_index']}]",
              datetime.fromisoformat(t["start_date"]), datetime.fromisoformat(t["end_date"]))
             for t in tis]
    return [(a[1], b[1]) for i, a in enumerate(spans) for b in spans[i + 1:]
            if a[0] != b[0] and a[2] < b[3] and b[2] < a[3]]


def _start_services(processes, env: dict, url: str, home):
    """The API server, the DAG processor, a LocalExecutor scheduler and the
    (idle) Celery workers, at once; the server once the release is parsed."""
    processes.start("api-server", cs.airflow("api-server"), env)
    processes.start("dag-processor", cs.airflow("dag-processor"), env)
    local = {**env, "AIRFLOW__CORE__EXECUTOR": "LocalExecutor"}
    processes.start("scheduler-local", cs.airflow("scheduler", "--skip-serve-logs"), local)
    for name in WORKERS:  # idle until a CeleryExecutor scheduler sends them tasks
        cs.start_celery_worker(processes, env, name)
    cs.wait_for_api(processes, url, timeout=180)
    server = cs.server(url, home)
    server.wait_for_dag(SPEC.dag, server.token(), timeout=180)
    return server


@pytest.mark.timeout(900)
def test_celery_workers_release_what_local_executor_releases(empty_source, release_dir, metadata,
                                                            tmp_path):
    from tools.demo_data import load_synthetic

    load_synthetic(MEMBERS, SEED)
    clock = Clock()
    processes = cs.Processes(tmp_path / "logs")
    try:
        with cs.redis_server(tmp_path / "redis", processes) as broker:
            port = cs.free_port()
            url = f"http://127.0.0.1:{port}"
            env = cs.airflow_env(tmp_path / "airflow", metadata, broker, port,
                                 {"AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                                  "AIRFLOW__CORE__PARALLELISM": "2"})
            cs.migrate(env)
            clock.lap("metadata migrated")
            server = _start_services(processes, env, url, tmp_path / "airflow")
            token = server.token()
            clock.lap("services up, DAG parsed")

            local_run, local_tis = _run(server, token)
            assert local_run["state"] == "success", _failed(local_tis)
            local_prints = fingerprints(SPEC)
            clock.lap("LocalExecutor run")

            processes.stop("scheduler-local")
            processes.start("scheduler-celery", cs.airflow("scheduler", "--skip-serve-logs"),
                            env)
            for name in WORKERS:
                cs.wait_for_log(processes, name, " ready.", timeout=120)
            celery_run, celery_tis = _run(server, token)
            assert celery_run["state"] == "success", _failed(celery_tis)
            celery_prints = fingerprints(SPEC)
            processes.check_alive()
            clock.lap("CeleryExecutor run")
    except BaseException:
        cs.keep_logs("celery-executor", processes.logs, tmp_path / "airflow" / "logs")
        raise
    finally:
        processes.stop_all()
    print(f"\n{clock}; release {celery_prints['all']}")

    ran = [t for t in celery_tis if t["state"] == "success"]
    by_worker = {name: sorted(f"{t['task_id']}[{t['map_index']}]" for t in ran
                              if t["hostname"] == name) for name in WORKERS}
    assert {t["hostname"] for t in ran} <= set(WORKERS), {t["hostname"] for t in ran}
    assert all(by_worker.values()), by_worker
    assert not {t["hostname"] for t in local_tis} & set(WORKERS)
    assert sum(t["task_id"] == "screen" for t in ran) == 2  # a mapped stage of two tasks
    assert _overlapping_on_two_workers(ran), by_worker  # the two slots were used at once
    assert all(not fp.startswith("0 rows") for fp in local_prints.values())
    assert celery_prints == local_prints


class Clock:
    """Seconds of each phase of the test, for its report line."""

    def __init__(self):
        self.t = time.time()
        self.laps: list[str] = []

    def lap(self, what: str) -> None:
        now = time.time()
        self.laps.append(f"{what} {now - self.t:.0f} s")
        self.t = now

    def __str__(self):
        return ", ".join(self.laps)
