"""A configured warehouse (AIRFLOW_CONN_WAREHOUSE) is used as is: nothing starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from urllib.parse import quote

import psycopg2.extensions
import pytest
from deid import warehouse as wh
from deid.paths import ROOT

pytestmark = pytest.mark.warehouse
PASSWORD = "not-a-secret-but-never-printed-51c2"


def test_configured_connection_is_used_and_nothing_is_started(warehouse, monkeypatch):
    socket_dir = str(wh.embedded_dir())
    uri = f"postgres://postgres@{quote(socket_dir, safe='')}/postgres"
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", uri)

    def refuse():
        raise AssertionError("the embedded warehouse must not start when one is configured")

    monkeypatch.setattr(wh, "start_embedded", refuse)
    assert not wh.is_embedded()
    assert psycopg2.extensions.parse_dsn(wh.dsn())["host"] == socket_dir
    with wh.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT current_database(), current_user")
        assert cur.fetchone() == ("postgres", "postgres")


def _refuse_embedded(monkeypatch):
    def refuse():
        raise AssertionError("the embedded warehouse must not start")

    monkeypatch.setattr(wh, "start_embedded", refuse)


def test_without_a_connection_the_embedded_server_is_used_and_said_once(warehouse, monkeypatch,
                                                                        caplog):
    monkeypatch.delenv("AIRFLOW_CONN_WAREHOUSE", raising=False)
    monkeypatch.setattr(wh, "_announced", set())
    with caplog.at_level("WARNING", logger="deid.warehouse"):
        assert wh.is_embedded()
        wh.dsn()
        with wh.connect():
            pass
    said = [r.getMessage() for r in caplog.records if r.name == "deid.warehouse"]
    assert said == [f"no Airflow connection 'warehouse' is defined (UI, CLI, environment or "
                    f"secrets backend): using the embedded PostgreSQL in {wh.embedded_dir()}"]


def test_a_source_that_cannot_answer_is_not_taken_for_no_connection(monkeypatch):
    """Airflow's own loop skips a failing secrets backend; here it stops the run."""
    import airflow.configuration
    from airflow.secrets.environment_variables import EnvironmentVariablesBackend

    class Down:
        def get_connection(self, conn_id):
            raise ConnectionError("metadata database down\n(details)")

    monkeypatch.delenv("AIRFLOW_CONN_WAREHOUSE", raising=False)
    monkeypatch.setattr(airflow.configuration, "ensure_secrets_loaded",
                        lambda: [EnvironmentVariablesBackend(), Down()])
    _refuse_embedded(monkeypatch)
    with pytest.raises(wh.WarehouseError, match=r"^could not look up the 'warehouse' connection "
                       r"in Down: metadata database down \(details\); no embedded warehouse "
                       r"started$"):
        wh.dsn()


class _Supervisor:
    """A task's channel to the API server that answers GetConnection with ``error``."""

    def __init__(self, error):
        self.error, self.asked = error, 0

    def send(self, msg):
        from airflow.sdk.execution_time.comms import ErrorResponse, GetConnection

        assert isinstance(msg, GetConnection) and msg.conn_id == "warehouse"
        self.asked += 1
        return ErrorResponse(error=self.error)


@pytest.fixture
def in_task(monkeypatch):
    from airflow.sdk.execution_time import task_runner

    monkeypatch.delenv("AIRFLOW_CONN_WAREHOUSE", raising=False)

    def enter(error):
        supervisor = _Supervisor(error)
        monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", supervisor, raising=False)
        return supervisor
    return enter


def test_in_a_task_only_the_servers_not_found_means_no_connection(in_task):
    from airflow.sdk.exceptions import ErrorType

    supervisor = in_task(ErrorType.CONNECTION_NOT_FOUND)
    assert wh.airflow_connection() is None and supervisor.asked == 2


def test_in_a_task_an_api_server_error_is_not_taken_for_no_connection(in_task, monkeypatch):
    """The SDK's backend turns an API server error into "not defined"."""
    from airflow.sdk.exceptions import ErrorType

    in_task(ErrorType.API_SERVER_ERROR)
    _refuse_embedded(monkeypatch)
    with pytest.raises(wh.WarehouseError, match="^Airflow did not say whether a 'warehouse' "
                       "connection exists .*API_SERVER_ERROR.*; no embedded warehouse started$"):
        wh.dsn()


def test_a_connection_reads_as_postgres_hook_reads_it():
    from airflow.models import Connection

    conn = Connection(conn_id="warehouse", conn_type="postgres", host="db.internal", port=5433,
                      login="deid_loader_login", password="pa ss'word", schema="claims",
                      extra='{"sslmode": "verify-full", "options": "-c search_path=release", '
                            '"cursor": "dictcursor", "iam": false}')
    assert psycopg2.extensions.parse_dsn(wh.connection_dsn(conn)) == {
        "host": "db.internal", "port": "5433", "user": "deid_loader_login",
        "password": "pa ss'word", "dbname": "claims", "sslmode": "verify-full",
        "options": "-c search_path=release"}  # the hook's own extras are not libpq's
    assert wh.describe(conn) == "deid_loader_login@db.internal:5433/claims"
    with pytest.raises(wh.WarehouseError, match="is of type 'mysql'"):
        wh.connection_dsn(Connection(conn_id="warehouse", conn_type="mysql", host="db"))
    with pytest.raises(wh.WarehouseError, match="IAM authentication"):
        wh.connection_dsn(Connection(conn_id="warehouse", conn_type="postgres", host="db",
                                     extra='{"iam": true}'))


def test_the_command_line_says_in_one_line_that_the_warehouse_cannot_be_reached(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DEID_VAR_DIR": str(tmp_path),
           "AIRFLOW_CONN_WAREHOUSE": f"postgres://loader:{PASSWORD}@127.0.0.1:{port}/claims"}
    done = subprocess.run([sys.executable, "-m", "deid.warehouse", "init"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: the Airflow connection 'warehouse' (loader@127.0.0.1:{port}/"
                      f"claims) cannot be reached: connection to server at \"127.0.0.1\", port "
                      f"{port} failed: Connection refused Is the server running on that host "
                      "and accepting TCP/IP connections?; no embedded warehouse started in its "
                      "place"]
    assert PASSWORD not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert wh.data_dirs_under(tmp_path) == []


def test_start_prints_the_dsn_without_its_password(monkeypatch, capsys):
    """``python -m deid.warehouse start`` names a configured warehouse but
    never prints its password."""
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE",
                       f"postgres://loader:{PASSWORD}@db.invalid:5432/claims")
    monkeypatch.setattr(wh, "start_embedded", lambda: pytest.fail("nothing may start"))
    assert wh.main(["start"]) == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out
    assert psycopg2.extensions.parse_dsn(out.strip()) == {
        "user": "loader", "password": "***", "host": "db.invalid", "port": "5432",
        "dbname": "claims"}
