"""A real ``airflow standalone`` (scheduler, LocalExecutor, API server, DAG
processor) on its own port and AIRFLOW_HOME, driven through the REST API v2:
for the UI tests and the scale benchmark."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from deid.paths import ROOT

START_TIMEOUT = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AirflowServer:
    def __init__(self, url: str, user: str, password: str, home: Path):
        self.url, self.user, self.password, self.home = url, user, password, home

    def token(self) -> str:
        body = json.dumps({"username": self.user, "password": self.password}).encode()
        req = urllib.request.Request(f"{self.url}/auth/token", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)["access_token"]

    def api(self, method: str, path: str, body=None, token: str | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {token or self.token()}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def wait_for_dag(self, dag_id: str, token: str, timeout: float = 120) -> None:
        """Until the DAG processor has parsed ``dag_id``."""
        deadline = time.time() + timeout
        while True:
            try:
                self.api("GET", f"/api/v2/dags/{dag_id}", token=token)
                return
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(3)

    def trigger(self, dag_id: str, conf: dict, token: str, attempts: int = 5) -> str:
        """Unpause and trigger ``dag_id``; a server error (seen once right after
        the DAG was first parsed) is retried a few times."""
        self.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False}, token=token)
        for attempt in range(attempts):
            try:
                run = self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns",
                               {"logical_date": None, "conf": conf}, token=token)
                return run["dag_run_id"]
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == attempts - 1:
                    raise
                time.sleep(3)
        raise AssertionError("unreachable")

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float) -> dict:
        """The run's record once it succeeded or failed."""
        deadline = time.time() + timeout
        state = None
        while time.time() < deadline:
            run = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            state = run["state"]
            if state in ("success", "failed"):
                return run
            time.sleep(3)
        raise TimeoutError(f"run {run_id} did not finish in {timeout:.0f} s (state {state})")


@contextmanager
def standalone(home: Path, env: dict | None = None, keep_log: Path | None = None):
    """Start ``python -m tools.standalone`` (``airflow standalone``) with
    ``AIRFLOW_HOME=home`` on a free port; yield an ``AirflowServer``; stop it,
    and copy its log to ``keep_log`` (when given) whatever happened."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **(env or {}), "AIRFLOW_HOME": str(home),
           "DEID_AIRFLOW_PORT": str(port), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True,
                   capture_output=True, timeout=300)
    log_path = home / "standalone.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tools.standalone"], env=env,
                                stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=ROOT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_up(url, proc, log_path)
            from tools.standalone import login

            yield AirflowServer(url, *login(), home)
        finally:
            stop(proc)
            if keep_log is not None:
                keep_log.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(log_path, keep_log)


def stop(proc) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after 30 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_until_up(url: str, proc, log_path: Path) -> None:
    deadline = time.time() + START_TIMEOUT
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"airflow standalone exited: {log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as r:
                health = json.load(r)
                if health.get("scheduler", {}).get("status") == "healthy":
                    return
        except OSError:
            pass
        time.sleep(2)
    raise RuntimeError(f"airflow standalone not up in {START_TIMEOUT}s: "
                       f"{log_path.read_text()[-3000:]}")
