"""Connections to the warehouse: a configured server, or the embedded default.

If ``AIRFLOW_CONN_WAREHOUSE`` is set (an Airflow connection URI, or any way
Airflow can resolve the ``warehouse`` connection id when running inside
Airflow) that server is used and nothing is started.  Otherwise a PostgreSQL
from the ``pgserver`` package is started with its data in ``var/warehouse``
(it keeps running for later tasks; ``python -m deid.warehouse stop`` stops it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from urllib.parse import unquote, urlparse

import psycopg2

from deid.paths import var_dir

CONN_ID = "warehouse"


def embedded_dir():
    return var_dir() / "warehouse"


def _configured_dsn() -> str | None:
    uri = os.environ.get("AIRFLOW_CONN_WAREHOUSE")
    if uri:
        return _uri_to_dsn(uri)
    return None


def _uri_to_dsn(uri: str) -> str:
    """Airflow's ``postgres://`` scheme to a libpq URI (host may be a socket dir)."""
    u = urlparse(uri)
    host = unquote(u.hostname or "") if u.hostname else ""
    parts = {"dbname": (u.path or "/postgres").lstrip("/") or "postgres",
             "user": unquote(u.username or "postgres"), "host": host or None,
             "port": u.port, "password": unquote(u.password) if u.password else None}
    if u.query:
        for kv in u.query.split("&"):
            k, _, v = kv.partition("=")
            if k in ("host", "sslmode", "options"):
                parts[k] = unquote(v)
    return " ".join(f"{k}={_quote(v)}" for k, v in parts.items() if v not in (None, ""))


def _quote(v) -> str:
    v = str(v).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{v}'"


def start_embedded():
    """Start (or attach to) the embedded server; returns its libpq URI."""
    import pgserver

    # pgserver logs at exit, after logging has closed its streams: keep it quiet
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    path = embedded_dir()
    path.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(path, cleanup_mode=None)
    return server.get_uri()


def stop_embedded() -> None:
    import pgserver

    if (embedded_dir() / "postmaster.pid").exists():
        server = pgserver.get_server(embedded_dir(), cleanup_mode="stop")
        server.cleanup()


def dsn() -> str:
    """The libpq connection string of the warehouse to use."""
    return _configured_dsn() or start_embedded()


def is_embedded() -> bool:
    return _configured_dsn() is None


@contextlib.contextmanager
def connect(autocommit: bool = False, readonly: bool = False):
    """A psycopg2 connection; commits on success, rolls back on error.
    ``readonly``: its transactions are READ ONLY (the extracts, whose query
    holds the release's scope)."""
    conn = psycopg2.connect(dsn())
    conn.set_session(readonly=readonly or None, autocommit=autocommit)
    try:
        yield conn
        if not autocommit:
            conn.commit()
    except BaseException:
        if not autocommit:
            conn.rollback()
        raise
    finally:
        conn.close()


def ensure_schemas() -> None:
    """Embedded: create or update schemas, tables and roles (we own it).
    Configured: only check that the owner's one-time setup was done and that
    this login may run a release (``deid.admin_setup``); a run creates nothing."""
    from deid import admin_setup

    if is_embedded():
        admin_setup.setup()
    else:
        admin_setup.check_ready()


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "start"
    if cmd == "start":
        print(dsn())
    elif cmd == "stop":
        stop_embedded()
    elif cmd == "init":
        ensure_schemas()
        print("schemas ready")
    else:
        sys.exit(f"usage: python -m deid.warehouse start|stop|init (got {cmd!r})")
