"""``make airflow``: ``airflow standalone`` with the project's DAGs, the
Releases view and the warehouse; prints the address and the login."""

from __future__ import annotations

import json
import os
import secrets
import sys

from deid.paths import var_dir

PORT = int(os.environ.get("DEID_AIRFLOW_PORT", "8080"))
USER = "admin"


def login() -> tuple[str, str]:
    """The UI user and its password, generated once into an owner-only file."""
    path = var_dir() / "airflow" / "passwords.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(json.dumps({USER: secrets.token_urlsafe(12)}))
        path.chmod(0o600)
    return USER, json.loads(path.read_text())[USER]


def environment() -> dict:
    from tools.demo import token_key

    env = dict(os.environ)
    env.setdefault("AIRFLOW_VAR_DEID_TOKEN_KEY", token_key())
    env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] = f"{USER}:admin"
    env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] = str(
        var_dir() / "airflow" / "passwords.json")
    env["AIRFLOW__API__PORT"] = str(PORT)
    # this machine only unless configured (Airflow's default, 0.0.0.0, is every interface)
    host = env.setdefault("AIRFLOW__API__HOST", "127.0.0.1")
    local = "localhost" if host in ("0.0.0.0", "::", "") else host
    local = f"[{local}]" if ":" in local else local  # an IPv6 address in a URL
    env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = f"http://{local}:{PORT}/execution/"
    env.setdefault("AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION", "False")
    # The task supervisor notices a task's exit within one heartbeat interval
    # when the process outlives its sockets (a large heap to free): 5 s by
    # default, which held a worker slot idle after about half of all tasks.
    env.setdefault("AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL", "1")
    # and a task survives an unreachable API server as long as with the defaults (3 x 5 s)
    env.setdefault("AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS", "15")
    return env


def main() -> int:
    from tools.demo import ensure_demo_data

    print(f"warehouse source tables: {ensure_demo_data()}")
    user, password = login()
    env = environment()
    url = env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].removesuffix("/execution/")
    print(f"Airflow UI: {url}  login: {user} / {password}")
    print(f"Releases view: {url}/deid/releases")
    sys.stdout.flush()
    os.execvpe("airflow", ["airflow", "standalone"], env)


if __name__ == "__main__":
    sys.exit(main())
