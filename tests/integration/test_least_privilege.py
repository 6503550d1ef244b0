"""One release end to end as a login holding only deid_loader (issue 26, item 3):
the owner sets the warehouse up once (deid.admin_setup); the run creates no
schema, loads and audits; a deid_reader login reads release and nothing else."""

from __future__ import annotations

import contextlib
import os
from urllib.parse import quote

import psycopg2
import pytest
from deid import admin_setup

from tests.dags.release_copies import TEST_POLICY, forget_history, write_copies

pytestmark = [pytest.mark.warehouse, pytest.mark.airflow]
LOADER, READER = "test_lp_loader", "test_lp_reader"
# the tests' copy of the medco release file is the runs' policy (k 3 on a few
# hundred synthetic members): a trigger may not go below it
CONF = {**TEST_POLICY["medco_codes"], "n_clusters": None}


@pytest.fixture(scope="module")
def logins(warehouse):
    """Two fresh logins, given their roles by the owner's setup."""
    if not warehouse.is_embedded():
        pytest.skip("creates logins without a password: embedded warehouse only")
    from tools.demo_data import TABLES, load_synthetic

    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
        cur.execute("DROP TABLE IF EXISTS release.medco_codes")  # the run must create it
        for login in (LOADER, READER):
            cur.execute(f"DROP ROLE IF EXISTS {login}")
            cur.execute(f"CREATE ROLE {login} LOGIN")
    forget_history(warehouse, "medco_codes")  # new members: a first release
    load_synthetic(n_members=200, seed=21)
    admin_setup.setup(loader=LOADER, reader=READER)
    yield
    with warehouse.connect() as conn, conn.cursor() as cur:
        for login in (LOADER, READER):
            cur.execute(f"DROP ROLE IF EXISTS {login}")


def _uri(warehouse, user: str) -> str:
    return f"postgres://{user}@{quote(str(warehouse.embedded_dir()), safe='')}/postgres"


@contextlib.contextmanager
def _cursor(warehouse, user: str):
    """An autocommit cursor of ``user`` on the embedded warehouse."""
    conn = psycopg2.connect(warehouse.dsn(), user=user)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


@pytest.fixture(scope="module")
def loader_runs(logins, warehouse, tmp_path_factory):
    """A MedCo run, then a run whose scope selects nothing, with the DAG's
    warehouse connection set to the loader login."""
    from airflow.dag_processing.dagbag import DagBag

    mp = pytest.MonkeyPatch()
    mp.setenv("DEID_RELEASES_DIR", str(write_copies(tmp_path_factory.mktemp("releases"))))
    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("deid_medco_codes")
    mp.setenv("AIRFLOW_CONN_WAREHOUSE", _uri(warehouse, LOADER))
    try:
        assert not warehouse.is_embedded()
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT session_user, current_user")
            assert cur.fetchone() == (LOADER, "deid_loader")
        good = dag.test(run_conf={**CONF, "scope": "TRUE"})
        bad = dag.test(run_conf={**CONF, "scope": "c.clm_from_dt < '1990-01-01'"})
    finally:
        mp.undo()
    return good, bad


def _one(warehouse, query, *args):
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(query, args)
        return cur.fetchall()


def test_a_loader_login_runs_a_release_end_to_end(loader_runs, warehouse):
    good, _ = loader_runs
    assert str(good.state).endswith("success"), good.state
    (outcome, rows), = _one(warehouse, "SELECT outcome, output_rows FROM audit.release_runs "
                            "WHERE release_name = 'medco_codes' AND run_id = %s", good.run_id)
    (count, owner), = _one(warehouse, "SELECT (SELECT count(*) FROM release.medco_codes), "
                           "tableowner FROM pg_tables WHERE schemaname = 'release' "
                           "AND tablename = 'medco_codes'")
    assert outcome == "loaded" and rows == count > 0
    assert owner == "deid_loader"  # created by the run, as the loader
    assert _one(warehouse, "SELECT count(*) FROM restricted.dummy_map WHERE run_id = %s",
                good.run_id)[0][0] > 0
    assert _one(warehouse, "SELECT count(*) FROM restricted.token_keys WHERE run_id = %s",
                good.run_id)[0][0] == 1


def test_a_failed_run_of_the_loader_is_audited(loader_runs, warehouse):
    _, bad = loader_runs
    assert str(bad.state).endswith("failed")
    (outcome, error), = _one(warehouse, "SELECT outcome, error FROM audit.release_runs "
                             "WHERE run_id = %s", bad.run_id)
    assert outcome == "failed" and "no claims" in error


DENIED_TO_LOADER = (
    "CREATE SCHEMA sneaky",
    "CREATE TABLE source.sneaky (x int)",
    "CREATE TABLE restricted.sneaky (x int)",
    "CREATE TABLE audit.sneaky (x int)",
    "CREATE TABLE public.sneaky (x int)",
    "INSERT INTO source.beneficiary_summary (desynpuf_id) VALUES ('x')",
    "DELETE FROM source.carrier_claims",
    "UPDATE audit.release_runs SET outcome = 'loaded'",
    "DELETE FROM audit.release_runs",
    "TRUNCATE restricted.dummy_map",
    "ALTER TABLE restricted.token_keys ADD COLUMN token_key text",
)


@pytest.mark.parametrize("statement", DENIED_TO_LOADER)
def test_the_loader_may_do_nothing_else(logins, warehouse, statement):
    with _cursor(warehouse, LOADER) as cur, \
            pytest.raises(psycopg2.errors.InsufficientPrivilege):
        cur.execute(statement)


def test_a_reader_login_reads_release_and_nothing_else(loader_runs, warehouse):
    tables = _one(warehouse, "SELECT schemaname, tablename FROM pg_tables WHERE schemaname IN "
                  "('source', 'release', 'release_build', 'restricted', 'audit', 'public')")
    assert {s for s, _ in tables} >= {"source", "release", "restricted", "audit"}
    with _cursor(warehouse, READER) as cur:
        for schema, table in tables:
            if schema == "release":
                cur.execute(f'SELECT count(*) FROM release."{table}"')
                continue
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(f'SELECT 1 FROM "{schema}"."{table}" LIMIT 1')
        cur.execute("SELECT count(*) FROM release.medco_codes")
        assert cur.fetchone()[0] > 0
        for statement in ("CREATE TABLE release.sneaky (x int)",
                          "CREATE TABLE public.sneaky (x int)",
                          "DELETE FROM release.medco_codes",
                          "INSERT INTO release.medco_codes VALUES ('x', 'y')"):
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(statement)


def test_prepare_with_a_login_lacking_rights_stops_and_says_what_to_do(logins, warehouse,
                                                                       monkeypatch):
    """A login that is not a deid_loader member is told what it lacks at the
    run's start, not at its load."""
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", _uri(warehouse, READER))
    with pytest.raises(RuntimeError, match="lacks USAGE on source.*admin_setup --loader"):
        warehouse.ensure_schemas()


def test_a_warehouse_never_set_up_is_refused_with_the_setup_command(logins, warehouse,
                                                                    monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE",
                       _uri(warehouse, LOADER).replace("/postgres", "/template1"))
    with pytest.raises(RuntimeError, match="not set up.*python -m deid.admin_setup"):
        warehouse.ensure_schemas()
