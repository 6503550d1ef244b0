"""A real ``airflow standalone`` for the UI and REST tests, on its own port and
AIRFLOW_HOME (so its scheduler does not share SQLite with dag.test runs),
against the tests' embedded warehouse."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 240


def _free_port() -> int:
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


@pytest.fixture(scope="session")
def airflow_server(warehouse, tmp_path_factory):
    home = tmp_path_factory.mktemp("airflow-server")
    port = _free_port()
    env = {**os.environ, "AIRFLOW_HOME": str(home), "DEID_AIRFLOW_PORT": str(port),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           # only the DAG the tests unpause runs: no scheduled runs of the others
           "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
           "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "5",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env["AIRFLOW_VAR_DEID_TOKEN_KEY"] = env.get("AIRFLOW_VAR_DEID_TOKEN_KEY", "ui-test-key")
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True,
                   capture_output=True, timeout=300)
    log = open(home / "standalone.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "deid.standalone"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_until_up(url, proc, home / "standalone.log")
        from deid.standalone import login

        yield AirflowServer(url, *login(), home)
    finally:
        _stop(proc)
        log.close()
        artifacts = ROOT / "test-artifacts"
        artifacts.mkdir(exist_ok=True)
        shutil.copy(home / "standalone.log", artifacts / "airflow-standalone.log")


def _stop(proc) -> None:
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
