"""The environment ``make airflow`` (and the tests' standalone server) runs with."""

from __future__ import annotations

from tools import standalone


def test_worker_slots_free_within_a_second_unless_configured(monkeypatch, tmp_path):
    monkeypatch.setenv("DEID_VAR_DIR", str(tmp_path))
    monkeypatch.delenv("AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL", raising=False)
    env = standalone.environment()
    assert env["AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL"] == "1"
    assert env["AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS"] == "15"
    monkeypatch.setenv("AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL", "3")
    assert standalone.environment()["AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL"] == "3"


def test_api_server_listens_on_this_machine_only_unless_configured(monkeypatch, tmp_path):
    monkeypatch.setenv("DEID_VAR_DIR", str(tmp_path))
    monkeypatch.delenv("AIRFLOW__API__HOST", raising=False)
    env = standalone.environment()
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://127.0.0.1:")
    monkeypatch.setenv("AIRFLOW__API__HOST", "0.0.0.0")
    env = standalone.environment()
    assert env["AIRFLOW__API__HOST"] == "0.0.0.0"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://localhost:")
