"""``python -m deid.warehouse stop`` and ``make clean`` on a real embedded PostgreSQL
(issue 26, item 6).

pgserver records the pid of every process that started or attached to the
server (``.handle_pids.json``) and its own cleanup stops the server only when
no other pid is recorded; a client killed before it could remove itself stayed
recorded, and the stop command silently did nothing (exit 0), after which
``make clean`` deleted ``var/`` under the running server.  Each test here runs
its own server in a temporary folder and stops it whatever happens.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.warehouse

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
CLIENT = ("from deid import warehouse; warehouse.start_embedded(); print('ready', flush=True); "
          "import time; time.sleep(600)")


def env_for(var: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW_CONN_WAREHOUSE"}
    env.update(DEID_VAR_DIR=str(var), PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    return env


def start_client(var: Path) -> subprocess.Popen:
    """A process that starts the embedded server (recording itself) and stays."""
    client = subprocess.Popen([PYTHON, "-c", CLIENT], env=env_for(var), cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "ready"
    return client


def postmaster_of(data: Path) -> psutil.Process:
    pid = int((data / "postmaster.pid").read_text().split()[0])
    return psutil.Process(pid)


def stop(var: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "deid.warehouse", "stop", *args], env=env_for(var),
                          cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def var():
    """A var/ folder; every client and server started in it is ended afterwards.

    Not under pytest's tmp_path: as root, pgserver runs PostgreSQL as the user
    ``pgserver``, which must traverse every parent folder, and pytest makes
    /tmp/pytest-of-root private again whenever a session starts.
    """
    (ROOT / "var" / "test").mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="stop-", dir=ROOT / "var" / "test"))
    base.chmod(0o755)
    var = base / "var"
    var.mkdir()
    clients: list[subprocess.Popen] = []
    yield var, clients
    for c in clients:
        c.kill()
        c.wait()
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and "-D" in cmd and str(var) in " ".join(cmd):
            proc.kill()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def running_with_stale_record(var):
    """The server started by a client that was then killed (SIGKILL: no atexit)."""
    var_dir, clients = var
    client = start_client(var_dir)
    clients.append(client)
    client.send_signal(signal.SIGKILL)
    client.wait()
    data = var_dir / "warehouse"
    assert client.pid in json.loads((data / ".handle_pids.json").read_text())
    assert postmaster_of(data).is_running()
    return var_dir, data


def test_stop_stops_a_server_whose_recorded_clients_are_dead(running_with_stale_record):
    var, data = running_with_stale_record
    postmaster = postmaster_of(data)
    run = stop(var)
    assert run.returncode == 0, run.stderr
    assert f"stopped PostgreSQL (pid {postmaster.pid})" in run.stdout
    assert not postmaster.is_running()
    assert not (data / "postmaster.pid").exists()
    assert not (data / ".handle_pids.json").exists()
    again = stop(var)
    assert again.returncode == 0 and "no PostgreSQL is running" in again.stdout


@pytest.fixture
def running_with_live_client(var):
    """The server started by a client that stays alive."""
    var_dir, clients = var
    client = start_client(var_dir)
    clients.append(client)
    return var_dir, client, postmaster_of(var_dir / "warehouse")


def test_stop_refuses_while_a_recorded_client_lives_and_force_stops(running_with_live_client):
    var_dir, client, postmaster = running_with_live_client
    run = stop(var_dir)
    assert run.returncode == 1
    assert f"live client process(es) [{client.pid}]" in run.stderr and "--force" in run.stderr
    assert postmaster.is_running()
    forced = stop(var_dir, "--force")
    assert forced.returncode == 0, forced.stderr
    assert not postmaster.is_running()


@pytest.mark.parametrize("kind", ["zombie", "pid reused after the record"])
def test_recorded_pids_that_are_no_client_do_not_block_the_stop(running_with_stale_record,
                                                                kind):
    var, data = running_with_stale_record
    postmaster = postmaster_of(data)
    other = subprocess.Popen(["sleep", "600"])
    try:
        record = data / ".handle_pids.json"
        record.write_text(json.dumps([other.pid]))
        if kind == "zombie":
            other.kill()  # not waited for: a zombie until the finally
            time.sleep(0.2)
        else:
            past = time.time() - 100
            os.utime(record, (past, past))
        run = stop(var)
        assert run.returncode == 0, run.stderr
        assert not postmaster.is_running()
        assert kind == "zombie" or other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_stop_finds_a_server_whose_pid_file_was_deleted(running_with_stale_record):
    var, data = running_with_stale_record
    postmaster = postmaster_of(data)
    (data / "postmaster.pid").unlink()
    run = stop(var)
    assert run.returncode == 0, run.stderr
    assert f"stopped PostgreSQL (pid {postmaster.pid})" in run.stdout
    assert not postmaster.is_running()


def test_a_stale_pid_file_naming_another_program_signals_nothing(var):
    """pid reuse: the pid in a stale postmaster.pid now belongs to another process."""
    var_dir, clients = var
    data = var_dir / "warehouse"
    data.mkdir()
    other = subprocess.Popen(["sleep", "600"])
    clients.append(other)
    (data / "postmaster.pid").write_text(f"{other.pid}\n{data}\n0\n5432\n\n\n\nready\n")
    run = stop(var_dir)
    assert run.returncode == 0 and "no PostgreSQL is running" in run.stdout
    time.sleep(0.2)
    assert other.poll() is None


def make_clean(var: Path) -> subprocess.CompletedProcess:
    """``make clean`` with ``var`` as the project's var/ (ROOT set to its parent)."""
    bin_dir = Path(PYTHON).parent
    return subprocess.run(["make", "-f", str(ROOT / "Makefile"), f"ROOT={var.parent}",
                           f"BIN={bin_dir}", f"PYTHONPATH={ROOT}:{ROOT / 'plugins'}", "clean"],
                          cwd=var.parent, env=env_for(var), capture_output=True, text=True,
                          timeout=240, check=False)


def test_make_clean_refuses_to_delete_a_running_warehouse(running_with_live_client):
    var_dir, client, postmaster = running_with_live_client
    run = make_clean(var_dir)
    assert run.returncode != 0
    assert "live client" in run.stderr
    assert var_dir.is_dir() and postmaster.is_running()
    client.kill()
    client.wait()
    run = make_clean(var_dir)
    assert run.returncode == 0, run.stderr
    assert "stopped PostgreSQL" in run.stdout
    assert not var_dir.exists() and not postmaster.is_running()
