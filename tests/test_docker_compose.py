"""docker-compose.yml, checked without a Docker engine: services, health checks,
dependencies, volumes, the environment the DAGs need, and its secrets (none has
a default, nothing listens beyond this machine, the .env.example says how to
make each one)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

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
        # the key goes where tasks run, nowhere else
        assert ("AIRFLOW_VAR_DEID_TOKEN_KEY" in env) == (name == "airflow-worker"), name
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



# --- secrets: docker compose's interpolation, as the Compose specification defines it
VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
SECRET = re.compile(r"PASSWORD|SECRET|FERNET|TOKEN_KEY")


class Missing(Exception):
    """What ``docker compose`` stops on: a required variable is unset or empty."""


def interpolate(text: str, env: dict) -> str:
    """``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``,
    ``${VAR?error}``; ``$$`` is a literal ``$``."""
    def one(m):
        name, op, arg = m["name"], m["op"], m["arg"]
        value = env.get(name)
        if op in (":?", "?") and (value is None or (op == ":?" and value == "")):
            raise Missing(name)
        if op in (":-", "-") and (value is None or (op == ":-" and value == "")):
            return arg
        return value or ""
    parts = text.split("$$")
    return "$".join(VAR.sub(one, p) for p in parts)


def _compose_with(env: dict) -> dict:
    return yaml.safe_load(interpolate((ROOT / "docker-compose.yml").read_text(), env))


def _variables() -> dict[str, set[str]]:
    """Every variable of the compose file and the forms it is used in."""
    out: dict[str, set[str]] = {}
    for m in VAR.finditer((ROOT / "docker-compose.yml").read_text().replace("$$", "")):
        out.setdefault(m["name"], set()).add(m["op"] or "")
    return out


def _env_example() -> tuple[dict[str, str], dict[str, str]]:
    """.env.example: {name: value} and {name: the command on the line above}."""
    values, commands, previous = {}, {}, ""
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
            if previous.startswith("# openssl"):
                commands[name] = previous[2:]
        previous = line
    return values, commands


def _generated_env() -> dict[str, str]:
    """.env.example filled in the way it says."""
    values, commands = _env_example()
    for name, command in commands.items():
        values[name] = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                                      check=True).stdout.strip()
    return values


def test_every_secret_is_required_from_env_with_no_default():
    variables = _variables()
    secrets = {n for n in variables if SECRET.search(n)}
    assert {"FERNET_KEY", "AIRFLOW_ADMIN_PASSWORD", "AIRFLOW_DB_PASSWORD", "WAREHOUSE_PASSWORD",
            "WAREHOUSE_ADMIN_PASSWORD", "DEID_TOKEN_KEY", "AIRFLOW_JWT_SECRET",
            "AIRFLOW_API_SECRET_KEY"} <= secrets
    for name in secrets:
        assert variables[name] == {":?"}, f"{name} must be ${{{name}:?...}}, not {variables[name]}"
    for name in secrets:  # compose stops when any one is missing
        env = {k: "x" for k in variables if k != name}
        with pytest.raises(Missing, match=name):
            _compose_with(env)


def test_no_literal_password_in_any_environment_or_uri():
    text = (ROOT / "docker-compose.yml").read_text()
    for service, spec in yaml.safe_load(text)["services"].items():
        env = spec.get("environment", {})
        for key, value in env.items():
            value = str(value)
            if SECRET.search(key) and "SIMPLE_AUTH" not in key:
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", value), (service, key, value)
            for password in re.findall(r"://[^:/@]+:([^@]+)@", value):
                assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", password), (service, key)


def test_fernet_key_is_required_and_the_documented_command_makes_a_valid_one():
    from cryptography.fernet import Fernet

    env = _generated_env()
    compose = _compose_with(env)
    for name in AIRFLOW_SERVICES:
        key = compose["services"][name]["environment"]["AIRFLOW__CORE__FERNET_KEY"]
        assert key == env["FERNET_KEY"]
        Fernet(key.encode())  # raises on a malformed key
    with pytest.raises(Missing, match="FERNET_KEY"):
        _compose_with({**env, "FERNET_KEY": ""})


def test_env_example_documents_every_variable_and_fills_nothing_secret():
    values, commands = _env_example()
    variables = _variables()
    assert set(variables) <= set(values), set(variables) - set(values)
    for name in variables:
        if SECRET.search(name):
            assert values[name] == "", f"{name}: .env.example must not ship a value"
            assert name in commands, f"{name}: no command to generate it"
    env = _generated_env()
    for name in commands:  # safe as they are in a connection URI
        assert re.fullmatch(r"[A-Za-z0-9_=-]{32,}", env[name]), name
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_nothing_is_published_beyond_this_machine():
    compose = _compose_with(_generated_env())
    published = {name: spec["ports"] for name, spec in compose["services"].items()
                 if spec.get("ports")}
    assert set(published) == {"airflow-apiserver", "warehouse"}
    for name, ports in published.items():
        for port in ports:
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_ui_users_come_from_the_auth_manager_in_use():
    """``_AIRFLOW_WWW_USER_*`` creates a user only with FAB (the image's
    entrypoint runs ``airflow users create``); the simple auth manager needs
    its users and a passwords file instead."""
    compose = _compose_with(_generated_env())
    services = compose["services"]
    env = services["airflow-init"]["environment"]
    manager = env["AIRFLOW__CORE__AUTH_MANAGER"]
    if manager.endswith("FabAuthManager"):
        assert env["_AIRFLOW_WWW_USER_CREATE"] == "true"
        assert env["_AIRFLOW_WWW_USER_USERNAME"] and env["_AIRFLOW_WWW_USER_PASSWORD"]
        assert "airflow.providers.fab" in (ROOT / "Dockerfile").read_text()
    else:
        assert manager.endswith("SimpleAuthManager")
        assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"]
        assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
    for name in AIRFLOW_SERVICES:  # one manager, and the admin password in the init job only
        assert services[name]["environment"]["AIRFLOW__CORE__AUTH_MANAGER"] == manager
        assert "_AIRFLOW_WWW_USER_PASSWORD" not in services[name]["environment"]
    shared = ("AIRFLOW__API__SECRET_KEY", "AIRFLOW__API_AUTH__JWT_SECRET")
    assert all(services[n]["environment"][k] for n in AIRFLOW_SERVICES for k in shared)


def test_runs_log_in_as_the_loader_and_only_the_init_job_as_owner():
    compose = _compose_with(_generated_env())
    services = compose["services"]
    for name in AIRFLOW_SERVICES:
        uri = services[name]["environment"]["AIRFLOW_CONN_WAREHOUSE"]
        assert uri.startswith("postgres://deid_loader_login:"), name
    init = services["airflow-init"]
    assert init["environment"]["AIRFLOW_CONN_WAREHOUSE"].startswith("postgres://warehouse_admin:")
    script = init["command"][-1]
    # the setup (again: it updates an older volume) before anything reads the warehouse
    assert script.index("python -m deid.admin_setup --loader deid_loader_login") < \
        script.index("python -m tools.demo_data")
    initdb = [m.split(":")[0] for m in services["warehouse"]["volumes"]
              if "docker-entrypoint-initdb.d" in m]
    assert initdb == ["./sql/source_schema.sql", "./sql/release_schema.sql", "./sql/roles.sql",
                      "./sql/compose_logins.sh"]
    logins = (ROOT / "sql" / "compose_logins.sh").read_text()
    assert "IN ROLE deid_loader;" in logins and "SET role = 'deid_loader'" in logins
    assert ":'loader_password'" in logins and "${WAREHOUSE_PASSWORD}'" not in logins
