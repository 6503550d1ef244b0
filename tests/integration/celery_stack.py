"""A distributed Airflow on this machine, for the CeleryExecutor test (issue 26).

What a deployment on several machines runs, as processes of their own on
127.0.0.1: Debian's ``redis-server`` as the Celery broker (no persistence,
its files in a temporary folder), Airflow's metadata and Celery's result
backend in a PostgreSQL database on the warehouse's server
(``benchmarks.bench_release_scale.metadata_url``, as docker-compose.yml keeps
them: Airflow 3.3 does not refuse SQLite beside the CeleryExecutor, but
SQLite takes one writer at a time, and the scheduler and the API server
write it while the Celery workers write their tasks' results),
``airflow api-server`` (the REST API, and the execution API the workers'
task processes call), ``airflow dag-processor``, ``airflow scheduler`` and
``airflow celery worker`` processes.

Every process is started in a session of its own, so its process group id
is its PID, and is stopped by that PID (``Processes.stop_all``): SIGTERM to
the group, SIGKILL to what is left after a grace period, whatever happened
before.  Nothing listens beyond 127.0.0.1: the API server and Redis bind
it, and the scheduler and the workers serve no logs (the task logs are
files in the shared AIRFLOW_HOME).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tools.airflow_server import AirflowServer, free_port
from deid.paths import ROOT

#: the environment variable that names a worker to ``worker_hostname``
WORKER_NAME = "DEID_CELERY_WORKER_NAME"


def worker_hostname() -> str:
    """``[core] hostname_callable`` of the Celery workers: each worker's task
    instances record the name it was started with, so a test tells apart two
    workers that share one machine (and one fully qualified name)."""
    return os.environ[WORKER_NAME]


class Processes:
    """The processes a test started, each with its log file, stopped by PID."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.started: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        if name in self.started and self.started[name].poll() is None:
            raise RuntimeError(f"{name} is already running (pid {self.started[name].pid})")
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log(name), "a") as log:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=ROOT)
        self.started[name] = proc
        return proc

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def check_alive(self) -> None:
        """Fail at once, with its log's tail, if a started process has exited."""
        for name, proc in self.started.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} (pid {proc.pid}) exited with {proc.returncode}:\n"
                                   f"{self.tail(name)}")

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.log(name)
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def stop(self, name: str, grace: float = 30) -> None:
        _stop_groups([self.started.pop(name)], grace)

    def stop_all(self, grace: float = 30) -> None:
        procs, self.started = list(self.started.values()), {}
        _stop_groups(procs, grace)


def _stop_groups(procs: list[subprocess.Popen], grace: float) -> None:
    """SIGTERM each process's group (its PID: ``start_new_session``), wait up
    to ``grace`` seconds for all of them, SIGKILL the groups still there."""
    for proc in procs:
        _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.time() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            pass
    for proc in procs:  # also the children a leader that exited left behind
        _signal_group(proc.pid, signal.SIGKILL)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


@contextmanager
def redis_server(workdir: Path, processes: Processes, timeout: float = 30):
    """Debian's ``redis-server`` on a free port of 127.0.0.1, without
    persistence; yields its ``redis://`` URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    processes.start("redis", [binary, "--bind", "127.0.0.1", "--port", str(port),
                              "--protected-mode", "yes", "--save", "", "--appendonly", "no",
                              "--daemonize", "no", "--dir", str(workdir)], dict(os.environ))
    deadline = time.time() + timeout
    while not _redis_ping(port):
        processes.check_alive()
        if time.time() > deadline:
            raise RuntimeError(f"redis-server not up in {timeout:.0f} s:\n"
                               f"{processes.tail('redis')}")
        time.sleep(0.2)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        processes.stop("redis", grace=10)


def _redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def airflow_env(home: Path, metadata: str, broker: str, port: int, extra: dict) -> dict:
    """The environment every Airflow process of the stack shares: one
    AIRFLOW_HOME, metadata database, broker, API address and JWT secret."""
    from tools.standalone import environment, login

    login()  # the users' password file, which the API server reads
    env = environment()  # the auth users, heartbeats, token key
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata,
        "AIRFLOW__CELERY__BROKER_URL": broker,
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + metadata,
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": "1",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
        # the release file does not change during the test: parse it once
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        **extra,
    })
    return env


def airflow(*args: str) -> list[str]:
    return [sys.executable, "-m", "airflow", *args]


def migrate(env: dict) -> None:
    subprocess.run(airflow("db", "migrate"), env=env, check=True, capture_output=True,
                   timeout=300, cwd=ROOT)


def start_celery_worker(processes: Processes, env: dict, name: str) -> None:
    """One ``airflow celery worker`` of one slot, named ``name`` to Celery and
    in its task instances' hostname (``worker_hostname``)."""
    env = {**env, WORKER_NAME: name,
           "AIRFLOW__CORE__HOSTNAME_CALLABLE": f"{__name__}.worker_hostname"}
    processes.start(name, airflow("celery", "worker", "--concurrency", "1",
                                  "--celery-hostname", f"{name}@%h", "--skip-serve-logs",
                                  "--without-mingle", "--without-gossip",
                                  "--pid", str(processes.logs / f"{name}.pid")), env)


def wait_for_log(processes: Processes, name: str, text: str, timeout: float) -> None:
    """Until ``text`` shows in the log of ``name`` (e.g. a Celery worker's "ready.")."""
    deadline = time.time() + timeout
    while text not in processes.tail(name, chars=1 << 20):
        processes.check_alive()
        if time.time() > deadline:
            raise RuntimeError(f"{name}: no {text!r} in {timeout:.0f} s:\n{processes.tail(name)}")
        time.sleep(0.5)


def wait_for_api(processes: Processes, url: str, timeout: float) -> None:
    """Until the API server answers its health endpoint."""
    deadline = time.time() + timeout
    while True:
        processes.check_alive()
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5):
                return
        except OSError:
            if time.time() > deadline:
                raise RuntimeError(f"API server not up in {timeout:.0f} s:\n"
                                   f"{processes.tail('api-server')}") from None
            time.sleep(1)


def keep_logs(name: str, *folders: Path) -> None:
    """Copy log folders to ``test-artifacts/<name>/`` (a failed run's evidence)."""
    for folder in folders:
        if folder.is_dir():
            shutil.copytree(folder, ROOT / "test-artifacts" / name / folder.name,
                            dirs_exist_ok=True)


def server(url: str, home: Path) -> AirflowServer:
    from tools.standalone import login

    return AirflowServer(url, *login(), home)
