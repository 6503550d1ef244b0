"""Connections to the warehouse: a configured server, or the embedded default.

If ``AIRFLOW_CONN_WAREHOUSE`` is set (an Airflow connection URI, or any way
Airflow can resolve the ``warehouse`` connection id when running inside
Airflow) that server is used and nothing is started.  Otherwise a PostgreSQL
from the ``pgserver`` package is started with its data in ``var/warehouse``
(it keeps running for later tasks; ``python -m deid.warehouse stop`` stops it,
or exits non-zero saying why not).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import signal
import sys
from pathlib import Path
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


class StopError(RuntimeError):
    """The embedded server could not be stopped; the message says why."""


# how long a fast shutdown (SIGINT: clients disconnected, then a checkpoint) may
# take before the immediate one (SIGQUIT: crash recovery at the next start)
FAST_SHUTDOWN_S = 60
IMMEDIATE_SHUTDOWN_S = 10


def stop_embedded(data_dir: Path | None = None, force: bool = False) -> str:
    """Stop the embedded PostgreSQL whose data is in ``data_dir`` (default
    ``var/warehouse``) and say what was done; StopError says why it could not.

    The server is found from its own pid file (``postmaster.pid``), not from
    pgserver's record of client processes: that record keeps the pids of
    processes that died without removing themselves (a killed task), and
    pgserver's own cleanup stops the server only when no other pid is recorded,
    so it left the server running whenever one had.  Live recorded clients
    make it refuse unless ``force``.
    """
    data = Path(data_dir or embedded_dir()).resolve()
    proc = _postmaster(data)
    if proc is None:
        return f"{data}: no PostgreSQL is running"
    clients = _live_clients(data)
    if clients and not force:
        raise StopError(f"{data}: PostgreSQL (pid {proc.pid}) is in use by live client "
                        f"process(es) {clients}; stop them first, or stop --force")
    _shut_down(proc, data)
    (data / ".handle_pids.json").unlink(missing_ok=True)  # its clients' server is gone
    return f"{data}: stopped PostgreSQL (pid {proc.pid})"


def _postmaster(data: Path):
    """The running postmaster of ``data``: the pid in its pid file, or (a pid
    file deleted under a running server) a postgres process started with
    ``-D data``.  A pid file whose pid is gone or now another program's is
    stale: nothing runs."""
    import psutil

    try:
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
        candidates = [pid] if psutil.pid_exists(pid) else []
    except (FileNotFoundError, ValueError):
        candidates = psutil.pids()
    for pid in candidates:
        try:
            proc = psutil.Process(pid)
            if proc.name() == "postgres" and _data_dir_arg(proc.cmdline()) == data:
                return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return None


def _data_dir_arg(args: list[str]) -> Path | None:
    for flag, value in itertools.pairwise(args):
        if flag == "-D":
            return Path(value).resolve()
    return None


def _live_clients(data: Path) -> list[int]:
    """Pids pgserver recorded as using the server whose process still runs.

    A process started after the record was last written is not the one it
    names (the pid was reused); a zombie has ended.
    """
    import psutil

    record = data / ".handle_pids.json"
    try:
        pids, written = json.loads(record.read_text()), record.stat().st_mtime
    except (FileNotFoundError, ValueError):
        return []
    alive = []
    for pid in pids:
        if not isinstance(pid, int) or pid == os.getpid():
            continue
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE and proc.create_time() <= written + 1:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:  # cannot tell: count it
            alive.append(pid)
    return sorted(alive)


def _shut_down(proc, data: Path) -> None:
    """PostgreSQL's fast shutdown, then its immediate one; StopError if it outlives both."""
    import psutil

    for sig, wait_s in ((signal.SIGINT, FAST_SHUTDOWN_S), (signal.SIGQUIT, IMMEDIATE_SHUTDOWN_S)):
        try:
            proc.send_signal(sig)
            proc.wait(wait_s)
            return
        except psutil.NoSuchProcess:
            return
        except psutil.AccessDenied:
            raise StopError(f"{data}: not allowed to signal PostgreSQL (pid {proc.pid}, "
                            f"user {_user(proc)}); run the stop as that user or root") from None
        except psutil.TimeoutExpired:
            continue
    waited = FAST_SHUTDOWN_S + IMMEDIATE_SHUTDOWN_S
    raise StopError(f"{data}: PostgreSQL (pid {proc.pid}) still runs {waited} s after "
                    "its fast and immediate shutdown signals")


def _user(proc) -> str:
    try:
        return proc.username()
    except Exception:  # noqa: BLE001 - only for the message
        return "unknown"


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


def data_dirs_under(root: Path) -> list[Path]:
    """The PostgreSQL data directories below ``root`` (the demo's, the tests')."""
    return sorted(p.parent for p in Path(root).rglob("PG_VERSION")
                  if (p.parent / "global").is_dir())


USAGE = "usage: python -m deid.warehouse start | init | stop [--force] [--under DIR | DATA_DIR ...]"


def main(argv: list[str]) -> int:
    """``start`` prints the DSN; ``init`` creates the schemas; ``stop`` stops the
    embedded server of each data directory (default ``var/warehouse``; ``--under
    DIR``: every one below DIR) and exits 1 if one could not be stopped."""
    cmd, rest = (argv[0], argv[1:]) if argv else ("start", [])
    if cmd == "start":
        print(dsn())
    elif cmd == "init":
        ensure_schemas()
        print("schemas ready")
    elif cmd == "stop":
        return _stop_command(rest)
    else:
        print(f"{USAGE} (got {cmd!r})", file=sys.stderr)
        return 2
    return 0


def _stop_command(args: list[str]) -> int:
    force = "--force" in args
    args = [a for a in args if a != "--force"]
    if args[:1] == ["--under"] and len(args) == 2:
        dirs = data_dirs_under(Path(args[1]))
        if not dirs:
            print(f"{args[1]}: no PostgreSQL data directory below it")
    elif any(a.startswith("-") for a in args):
        print(USAGE, file=sys.stderr)
        return 2
    else:
        dirs = [Path(a) for a in args] or [embedded_dir()]
    failed = 0
    for data in dirs:
        try:
            print(stop_embedded(data, force=force))
        except StopError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
