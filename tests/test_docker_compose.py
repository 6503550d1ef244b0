"""docker-compose.yml, checked without a Docker engine: services, health checks,
dependencies, volumes and the environment the DAGs need."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-worker", "airflow-triggerer")


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_of_the_official_stack_plus_warehouse():
    services = _compose()["services"]
    for name in (*AIRFLOW_SERVICES, "airflow-init", "postgres", "redis", "warehouse"):
        assert name in services, name
    assert services["airflow-apiserver"]["command"] == "api-server"
    assert services["airflow-worker"]["command"] == "celery worker"
    assert services["airflow-dag-processor"]["command"] == "dag-processor"


def test_health_checks_and_dependencies():
    services = _compose()["services"]
    for name in (*AIRFLOW_SERVICES, "postgres", "redis", "warehouse"):
        assert services[name].get("healthcheck", {}).get("test"), f"{name}: no health check"
    for name in AIRFLOW_SERVICES:
        deps = services[name]["depends_on"]
        for needed in ("postgres", "redis", "warehouse"):
            assert deps[needed]["condition"] == "service_healthy", (name, needed)
        assert deps["airflow-init"]["condition"] == "service_completed_successfully", name
    assert services["airflow-worker"]["depends_on"]["airflow-apiserver"]["condition"] == \
        "service_healthy"


def test_environment_matches_what_the_dags_need():
    services = _compose()["services"]
    for name in AIRFLOW_SERVICES:
        env = services[name]["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
        mounts = {v.split(":")[1]: v.split(":")[0] for v in services[name]["volumes"]}
        project = [m for m, src in mounts.items() if src in ("./", ".")]
        assert project, f"{name}: project not mounted"
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == f"{project[0]}/dags"
        assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == f"{project[0]}/plugins"
        assert f"{project[0]}/plugins" in env["PYTHONPATH"].split(":")
        assert re.match(r"postgres://[^@]+@warehouse:5432/claims$", env["AIRFLOW_CONN_WAREHOUSE"])
        assert "AIRFLOW_VAR_DEID_TOKEN_KEY" in env
        assert int(env["AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL"]) == 1  # slots free fast
        assert int(env["AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS"]) == 15  # same 15 s tolerance
        staging = env["DEID_STAGING_DIR"]
        assert staging in mounts and not staging.startswith(project[0] + "/")


def test_warehouse_init_scripts_exist_and_volumes_are_declared():
    compose = _compose()
    for mount in compose["services"]["warehouse"]["volumes"]:
        src = mount.split(":")[0]
        if src.startswith("./"):
            assert (ROOT / src).is_file(), src
    declared = set(compose["volumes"])
    for service in compose["services"].values():
        for mount in service.get("volumes", []):
            src = mount.split(":")[0]
            if not src.startswith((".", "/")):
                assert src in declared, src


def test_image_pins_the_same_airflow_as_requirements():
    pinned = re.search(r"^apache-airflow==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    base = re.search(r"^FROM apache/airflow:(\S+?)-python3\.11$",
                     (ROOT / "Dockerfile").read_text(), re.M)
    assert pinned and base and pinned.group(1) == base.group(1)
