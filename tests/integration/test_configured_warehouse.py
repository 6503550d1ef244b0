"""A configured warehouse (AIRFLOW_CONN_WAREHOUSE) is used as is: nothing starts."""

from __future__ import annotations

from urllib.parse import quote

import psycopg2.extensions
import pytest
from deid import warehouse as wh

pytestmark = pytest.mark.warehouse


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
