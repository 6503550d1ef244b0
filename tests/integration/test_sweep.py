"""A scheduler killed mid-run (issue 26 item 7): a real ``airflow standalone``
runs a release until its load task waits in the swap, then the scheduler and
every process under it are SIGKILLed.  Airflow keeps showing the run
"running"; ``python -m deid.sweep --stale-after`` leaves the run alone while
its task beats, and closes its audit row ``failed`` and deletes its staging
once it stopped beating.  The previous release stays as it was.

The helpers here are shared with tests/dags/test_audit_every_run.py."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import psutil
import psycopg2
import pytest

from tests.dags.release_copies import write_copies

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

ROOT = Path(__file__).resolve().parents[2]
RELEASE, DAG_ID = "medco_codes", "deid_medco_codes"
BEAT = 1  # seconds between a task's heartbeats in the tests' Airflow
STALE = 6  # the CLI sweep's --stale-after: several missed heartbeats


@pytest.fixture
def medco_source(empty_source):
    """300 synthetic members, which the tests' medco copy (k 3) releases; no
    open run of the release before or after (a scheduled run's id comes again
    in each test's Airflow, and its prepare would find an earlier test's row open)."""
    from tools.demo_data import load_synthetic

    load_synthetic(n_members=300, seed=5)
    _close_left_over()
    yield empty_source
    _close_left_over()


def _close_left_over() -> None:
    from deid import sweep

    for release, run_id in sweep.open_runs(RELEASE):
        sweep.close(release, run_id, "left over by a test's Airflow")


@contextmanager
def airflow(tmp_path: Path, name: str):
    """A standalone Airflow on the tests' release copies and warehouse,
    retrying a failed task after 1 s and beating every BEAT s; stopped (its
    process group killed) whatever happens, its log kept in test-artifacts."""
    from tools.airflow_server import standalone

    releases = write_copies(tmp_path / "releases", {RELEASE: {"k": 3, "min_anonymity_set": 5}})
    env = {"DEID_RELEASES_DIR": str(releases), "DEID_RETRY_DELAY_SECONDS": "1",
           "DEID_HEARTBEAT_SECONDS": str(BEAT),
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
           "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
           "AIRFLOW_VAR_DEID_TOKEN_KEY": os.environ.get("AIRFLOW_VAR_DEID_TOKEN_KEY", "k")}
    with standalone(tmp_path / "airflow", env, ROOT / "test-artifacts" / f"airflow-{name}.log") \
            as server:
        yield server


@contextmanager
def swap_held(warehouse, release: str = RELEASE):
    """Hold the release's swap lock (``deid.load.swap_in``): its load task
    builds its tables, then waits in the swap until killed or released."""
    conn = psycopg2.connect(warehouse.dsn())
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (release,))
        yield
    finally:
        conn.close()  # ends the session: the lock goes with it


def wait_for(what: str, probe, timeout: float, every: float = 1):
    """``probe()``'s first truthy value within ``timeout`` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"no {what} within {timeout:.0f} s")


def task_instance(server, run_id: str, task_id: str, token: str, dag_id: str = DAG_ID) -> dict:
    return server.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}",
                      token=token)


def start_run(server, token: str) -> None:
    """Unpause the release and trigger it.  Unpausing also schedules its
    latest interval; one run at a time (max_active_runs), whichever comes first."""
    server.wait_for_dag(DAG_ID, token)
    server.trigger(DAG_ID, {}, token)


def waiting_in_swap(server, token: str, try_number: int = 1) -> tuple[str, int] | None:
    """(run id, pid of its load task process) once the running run's load
    task, at try ``try_number``, waits for the swap lock."""
    runs = server.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns?state=running", token=token)
    for run in runs["dag_runs"]:
        ti = task_instance(server, run["dag_run_id"], "load", token)
        if ti["state"] == "running" and ti["try_number"] == try_number and ti.get("pid") \
                and _blocked_on_lock():
            return run["dag_run_id"], ti["pid"]
    return None


def _blocked_on_lock() -> bool:
    from deid.warehouse import connect

    with connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory' "
                    "AND query LIKE '%%pg_advisory_xact_lock%%'")
        return cur.fetchone()[0] > 0


def kill_tree(pid: int) -> list[int]:
    """SIGKILL ``pid`` and every process under it; the pids killed."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    psutil.wait_procs(procs, timeout=10)
    return [p.pid for p in procs]


def scheduler_pid(home: Path) -> int:
    """The ``airflow scheduler`` process of the standalone in ``home``."""
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = p.info["cmdline"] or []
            if "scheduler" in cmd and any("airflow" in c for c in cmd[:2]) \
                    and p.environ().get("AIRFLOW_HOME") == str(home):
                return p.pid
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    raise LookupError(f"no airflow scheduler with AIRFLOW_HOME={home}")


def audit_rows(warehouse, run_id: str, since: dt.datetime) -> list[tuple]:
    """The run's rows since ``since`` (a scheduled run's id comes again in
    the next test's Airflow, on the same warehouse)."""
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT outcome, error FROM audit.release_runs WHERE release_name = %s "
                    "AND run_id = %s AND started_at >= %s ORDER BY ended_at",
                    (RELEASE, run_id, since))
        return cur.fetchall()


def previous_release(warehouse) -> str:
    """The live release table's content, as a digest; one is put in place first if none."""
    from deid import load

    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('release.medco_codes')")
        exists = cur.fetchone()[0] is not None
    if not exists:
        frame = pd.DataFrame({"patient_pseudonym": ["p0"], "code_token": ["t0"]})
        built = load.build_all(RELEASE, "previous", "medco_codes", {"medco_records": frame})
        load.swap(RELEASE, "previous", built, {}, {
            "release_name": RELEASE, "run_id": "previous", "method": "medco", "params": {},
            "seed": 0, "started_at": "2026-01-01T00:00:00+00:00"})
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) "
                    "FROM release.medco_codes t")
        return repr(cur.fetchone())


def staged(run_id: str) -> bool:
    from deid import staging

    return staging.run_dir(RELEASE, run_id, create=False).exists()


def cli_sweep(home: Path) -> list[str]:
    """``python -m deid.sweep`` against the standalone's metadata database:
    the runs it closed ("closed <release> <run id>: <why>")."""
    out = subprocess.run([sys.executable, "-m", "deid.sweep", "--release", RELEASE,
                          "--stale-after", str(STALE)], env={**os.environ, "AIRFLOW_HOME": str(home)},
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line for line in out.stdout.splitlines() if line.startswith("closed ")]


@pytest.mark.ui
def test_a_scheduler_killed_mid_run_is_swept(medco_source, tmp_path):
    warehouse = medco_source
    before, since = previous_release(warehouse), dt.datetime.now(dt.timezone.utc)
    with swap_held(warehouse), airflow(tmp_path, "killed-scheduler") as server:
        try:
            token = server.token()
            start_run(server, token)
            run_id, task_pid = wait_for("load task waiting in the swap",
                                        lambda: waiting_in_swap(server, token), timeout=300)
            assert audit_rows(warehouse, run_id, since) == [("running", None)] and staged(run_id)

            assert cli_sweep(server.home) == []  # its load task beats: live, left alone
            assert audit_rows(warehouse, run_id, since) == [("running", None)] and staged(run_id)

            killed = kill_tree(scheduler_pid(server.home))
            assert task_pid in killed and not psutil.pid_exists(task_pid)
            time.sleep(STALE + 2 * BEAT)
            assert server.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}",
                              token=token)["state"] == "running"  # Airflow's view is stuck
            out = cli_sweep(server.home)
        finally:  # no task may outlive the test and load once the lock goes
            with contextlib.suppress(LookupError):
                kill_tree(scheduler_pid(server.home))

    assert len(out) == 1 and out[0].startswith(f"closed {RELEASE} {run_id}: killed: no heartbeat")
    (outcome, error), = audit_rows(warehouse, run_id, since)
    assert outcome == "failed" and error.startswith("killed: no heartbeat since ") \
        and "Airflow still shows the run running" in error
    assert not staged(run_id)
    assert previous_release(warehouse) == before


def _open(warehouse, release: str, run_id: str) -> None:
    """A run as ``prepare`` leaves it: an open row and staging holding its decided params."""
    from deid import load, staging, steps

    load.open_audit({"release_name": release, "run_id": run_id, "method": "medco",
                     "params": {"k": 3}, "seed": 1, "started_at": dt.datetime.now(dt.timezone.utc)})
    steps.Run(release, run_id).write_json(steps.RUN_PARAMS, {
        "params": {"k": 4, "seed": 2}, "scope": "TRUE",
        "run_record": {"triggered_by": "ann", "scope": "TRUE", "overrides": {}}})
    staging.beat(release, run_id)


def test_the_sweep_closes_only_runs_that_are_over(warehouse):
    """Airflow's view decides; without it (a state it cannot give) nothing is
    touched; a heartbeat older than ``stale_after`` ends a run Airflow shows running."""
    from deid import load, staging, sweep

    release = "sweep_test"
    with warehouse.connect() as conn, conn.cursor() as cur:  # an earlier run of this test
        cur.execute("DELETE FROM audit.release_runs WHERE release_name = %s", (release,))
    states = {"live": "running", "killed": "failed", "done": "success", "queued": "queued",
              "stuck": "running"}
    for run_id in (*states, "unknown"):
        _open(warehouse, release, run_id)
    old = time.time() - 120
    os.utime(staging.run_dir(release, "stuck", create=False) / staging.HEARTBEAT, (old, old))

    def run_state(dag_id, run_id):
        assert dag_id == "deid_sweep_test"
        if run_id == "unknown":
            raise RuntimeError("Airflow cannot say")
        return states[run_id]

    closed = sweep.sweep(run_state, lambda d, r: {"load": "failed", "report": "success"},
                         release=release)
    assert {c.run_id for c in closed} == {"killed", "done"}
    closed += sweep.sweep(run_state, None, release=release, exclude=("killed",), stale_after=60)
    assert [c.run_id for c in closed[2:]] == ["stuck"]
    assert closed[2].reason.startswith("killed: no heartbeat since ")
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT run_id, outcome, error, params, triggered_by FROM audit.release_runs "
                    "WHERE release_name = %s", (release,))
        rows = {r[0]: r[1:] for r in cur.fetchall()}
    assert rows["killed"] == ("failed", "killed: Airflow ended the run failed but no task closed "
                              "its audit row (a killed task runs no failure callback); failed "
                              "tasks: load", {"k": 4, "seed": 2}, "ann")
    assert rows["stuck"][0] == rows["done"][0] == "failed"
    assert all(rows[r][0] == "running" for r in ("live", "queued", "unknown"))
    assert {r for _, r in staging.staged_runs(release)} == {"live", "queued", "unknown"}
    for run_id in ("live", "queued", "unknown"):  # leave the warehouse as found
        sweep.close(release, run_id, "test teardown")
    assert load.open_runs(release) == [] and staging.staged_runs(release) == []
