"""The warehouse is Airflow's ``warehouse`` connection (issue 24).

A connection created through Airflow's own API (the metadata database, as
the UI and ``airflow connections add`` do; not AIRFLOW_CONN_WAREHOUSE) sends
a release to the server it names: here a second embedded PostgreSQL started
by the test, and not the tests' default one.  A connection that cannot be
reached fails the run with one clear line, and no embedded server is
started in its place.
"""

from __future__ import annotations

import contextlib
import os
import socket

import psycopg2
import psutil
import pytest
from deid import admin_setup
from deid import warehouse as wh
from tools.demo_data import load_synthetic

from tests.dags.release_copies import write_copies

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse]

CONF = {"k": 3, "min_anonymity_set": 5, "n_clusters": None, "seed": 11}
EMBEDDED = "no Airflow connection 'warehouse' is defined"
PASSWORD = "not-a-secret-but-never-logged-9f3a"


@contextlib.contextmanager
def airflow_connection(**fields):
    """The ``warehouse`` connection in Airflow's metadata database, removed after."""
    from airflow.models import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(Connection).filter(Connection.conn_id == wh.CONN_ID).delete()
        session.add(Connection(conn_id=wh.CONN_ID, conn_type="postgres", **fields))
    try:
        yield
    finally:
        with create_session() as session:
            session.query(Connection).filter(Connection.conn_id == wh.CONN_ID).delete()


@pytest.fixture(scope="module", autouse=True)
def release_files(tmp_path_factory):
    folder = write_copies(tmp_path_factory.mktemp("releases"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEID_RELEASES_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def second_server(warehouse, tmp_path_factory):
    """A second embedded PostgreSQL (the default one is set up first, by
    ``warehouse``), stopped at the end."""
    import pgserver

    data = tmp_path_factory.mktemp("second") / "pg"
    pgserver.get_server(data, cleanup_mode=None)
    try:
        yield data
    finally:
        print(wh.stop_embedded(data, force=True))


def _medco_dag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("deid_medco_codes")


def _audit_rows(dsn: str, run_id: str) -> list:
    with contextlib.closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT outcome, output_rows FROM audit.release_runs "
                    "WHERE release_name = 'medco_codes' AND run_id = %s", (run_id,))
        return cur.fetchall()


def test_a_connection_made_in_airflow_receives_the_release(second_server, warehouse, caplog):
    default_dsn = wh.start_embedded()
    with airflow_connection(host=str(second_server), login="postgres", schema="postgres"):
        assert not wh.is_embedded()
        assert psycopg2.extensions.parse_dsn(wh.dsn())["host"] == str(second_server)
        admin_setup.setup()  # the owner's one-time setup of the new warehouse
        load_synthetic(n_members=300, seed=5, replace=True)
        run = _medco_dag().test(run_conf=CONF)
    assert str(run.state).endswith("success"), run.state
    assert EMBEDDED not in caplog.text
    second_dsn = psycopg2.extensions.make_dsn(host=str(second_server), user="postgres",
                                              dbname="postgres")
    (outcome, rows), = _audit_rows(second_dsn, run.run_id)
    assert outcome == "loaded" and rows > 0
    with contextlib.closing(psycopg2.connect(second_dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM release.medco_codes")
        assert cur.fetchone()[0] == rows
    assert _audit_rows(default_dsn, run.run_id) == []  # not in the default warehouse


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_under(root) -> list[int]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["name"] == "postgres" and str(root) in " ".join(proc.info["cmdline"]):
                found.append(proc.pid)
    return found


def test_an_unreachable_connection_fails_the_run_and_starts_nothing(warehouse, tmp_path,
                                                                    monkeypatch, capfd):
    monkeypatch.setenv("DEID_VAR_DIR", str(tmp_path))  # where an embedded server would go
    port = _closed_port()
    with airflow_connection(host="127.0.0.1", port=port, login="deid_loader_login",
                            password=PASSWORD, schema="claims"):
        run = _medco_dag().test(run_conf=CONF)
        with pytest.raises(wh.WarehouseError) as raised:
            with wh.connect():
                pass
    assert str(run.state).endswith("failed"), run.state
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states["prepare"].endswith("failed"), states
    line = (f"the Airflow connection 'warehouse' (deid_loader_login@127.0.0.1:{port}/claims) "
            "cannot be reached: ")
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    log = "".join(capfd.readouterr())
    assert line in log  # the task log says why the run failed
    assert "OperationalError" not in log  # the driver's traceback is not chained to it
    assert PASSWORD not in log + str(raised.value)
    assert wh.data_dirs_under(tmp_path) == [] and _postgres_under(tmp_path) == []


def test_without_a_connection_each_task_says_once_that_it_uses_the_embedded_server(warehouse,
                                                                                    caplog):
    """A run refused in its first task: ``sweep`` and ``prepare`` run, and
    each connects to the embedded warehouse more than once (``prepare``'s
    failure callback too): one line per task."""
    run = _medco_dag().test(run_conf={**CONF, "k": 2})  # below the release file's k
    from airflow.utils.state import TaskInstanceState as State

    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    ran = sorted(t for t, s in states.items() if s in (State.SUCCESS, State.FAILED))
    assert ran == ["prepare", "sweep"], states
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith(EMBEDDED)]
    assert len(said) == len(ran), said
    assert said[0].endswith(f"using the embedded PostgreSQL in {wh.embedded_dir()}")
