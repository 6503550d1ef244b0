"""Connections to the warehouse: Airflow's ``warehouse`` connection, or the embedded default.

The warehouse is the connection Airflow resolves for the id ``warehouse``,
wherever it was defined: the UI or ``airflow connections add`` (the metadata
database), ``AIRFLOW_CONN_WAREHOUSE``, or a secrets backend.  Inside a task
the Task SDK asks the API server; outside one (``python -m deid.warehouse``,
the demo, the tests) Airflow's own secrets backends are asked directly.

Only when no source defines ``warehouse`` is a PostgreSQL from the
``pgserver`` package started, with its data in ``var/warehouse`` (it keeps
running for later tasks; ``python -m deid.warehouse stop`` stops it, or exits
non-zero saying why not), and the task log says so in one line.  A lookup
that could not get an answer, or a defined connection that cannot be
reached, raises ``WarehouseError`` (one line, no password): a release never
goes to another database in its place.
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

import psycopg2
import psycopg2.extensions

from deid.paths import var_dir

CONN_ID = "warehouse"
log = logging.getLogger(__name__)


class WarehouseError(RuntimeError):
    """The ``warehouse`` connection could not be looked up or reached (one line, no secret)."""


def embedded_dir():
    return var_dir() / "warehouse"


def airflow_connection():
    """The ``warehouse`` connection as Airflow resolves it, or None when no
    source defines it; WarehouseError when a source could not answer."""
    if _in_task():
        return _task_connection()
    return _local_connection()


def _in_task() -> bool:
    """A task's process: the Task SDK reaches connections through its supervisor."""
    runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    return getattr(runner, "SUPERVISOR_COMMS", None) is not None


def _task_connection():
    """Through ``BaseHook.get_connection`` (environment, worker secrets
    backends, then the API server: metadata DB and its secrets backends).
    The SDK says "not defined" also when the API server did not answer (its
    backend turns every error into "absent"), so absence is believed only
    when the server itself says CONNECTION_NOT_FOUND."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException, ErrorType
    from airflow.sdk.execution_time import task_runner
    from airflow.sdk.execution_time.comms import ErrorResponse, GetConnection

    try:
        return BaseHook.get_connection(CONN_ID)
    except AirflowNotFoundException:
        pass
    try:
        answer = task_runner.SUPERVISOR_COMMS.send(GetConnection(conn_id=CONN_ID))
    except Exception as exc:  # noqa: BLE001 - reported as one line below
        raise WarehouseError(f"could not ask Airflow for the {CONN_ID!r} connection "
                             f"({type(exc).__name__}); no embedded warehouse started") from None
    if isinstance(answer, ErrorResponse) and answer.error == ErrorType.CONNECTION_NOT_FOUND:
        return None
    said = answer.error.value if isinstance(answer, ErrorResponse) else type(answer).__name__
    raise WarehouseError(f"Airflow did not say whether a {CONN_ID!r} connection exists "
                         f"({said}); no embedded warehouse started")


def _local_connection():
    """Outside a task: Airflow's secrets backends in its order (environment,
    metadata DB, any configured backend), each asked in turn; one that fails
    raises instead of being skipped, as Airflow's own loop would."""
    from airflow.configuration import ensure_secrets_loaded
    from airflow.secrets.metastore import MetastoreBackend

    for backend in ensure_secrets_loaded():
        try:
            conn = backend.get_connection(conn_id=CONN_ID)
        except Exception as exc:  # noqa: BLE001 - reported as one line below
            hint = (" (is Airflow's metadata database set up? `airflow db migrate` under "
                    "AIRFLOW_HOME)") if isinstance(backend, MetastoreBackend) else ""
            raise WarehouseError(f"could not look up the {CONN_ID!r} connection in "
                                 f"{type(backend).__name__}: {_first_line(exc)}; "
                                 f"no embedded warehouse started{hint}") from None
        if conn:
            return conn
    return None


# libpq's own keywords: the extras of a connection that are connection parameters
def _libpq_keywords() -> frozenset:
    import psycopg

    return frozenset(o.keyword.decode() for o in psycopg.pq.Conninfo.get_defaults())


def connection_dsn(conn) -> str:
    """libpq's connection string for an Airflow connection, as PostgresHook
    reads it: host (or a socket directory), port, login, password, schema as
    the database, and the extras that are libpq parameters (sslmode, options...)."""
    if conn.conn_type not in ("postgres", "postgresql"):
        raise WarehouseError(f"the {CONN_ID!r} connection is of type {conn.conn_type!r}; "
                             "the warehouse is PostgreSQL (type 'postgres')")
    if conn.extra_dejson.get("iam"):
        raise WarehouseError(f"the {CONN_ID!r} connection asks for IAM authentication, which "
                             "the warehouse does not support: give it a login and password")
    keywords = _libpq_keywords()
    parts = {"host": conn.host, "port": conn.port, "user": conn.login,
             "password": conn.password, "dbname": conn.schema,
             **{k: v for k, v in conn.extra_dejson.items() if k in keywords}}
    return psycopg2.extensions.make_dsn(**{k: v for k, v in parts.items() if v not in (None, "")})


def describe(conn) -> str:
    """Where a connection points, without its password."""
    return f"{conn.login or ''}@{conn.host or 'localhost'}:{conn.port or 5432}/{conn.schema or ''}"


def _masked(dsn_text: str) -> str:
    """``dsn_text`` with its password, if any, written as ``***``."""
    parts = psycopg2.extensions.parse_dsn(dsn_text)
    if not parts.get("password"):
        return dsn_text
    return psycopg2.extensions.make_dsn(**{**parts, "password": "***"})


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


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


def _target() -> tuple[str, object | None]:
    """The DSN to use and the Airflow connection it comes from (None: embedded)."""
    conn = airflow_connection()
    if conn is not None:
        return connection_dsn(conn), conn
    target = start_embedded()
    _announce_embedded()
    return target, None


_announced: set = set()


def _announce_embedded() -> None:
    """One log line per task (per process outside Airflow): which server a run uses."""
    key = _task_key()
    if key not in _announced:
        _announced.add(key)
        log.warning("no Airflow connection %r is defined (UI, CLI, environment or secrets "
                    "backend): using the embedded PostgreSQL in %s", CONN_ID, embedded_dir())


def _task_key():
    try:
        from airflow.sdk import get_current_context

        ti = get_current_context()["ti"]
        return (ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
    except Exception:  # noqa: BLE001 - not in a task
        return None


def dsn() -> str:
    """The libpq connection string of the warehouse to use."""
    return _target()[0]


def is_embedded() -> bool:
    """No ``warehouse`` connection is defined: the embedded server is the warehouse."""
    return airflow_connection() is None


@contextlib.contextmanager
def connect(autocommit: bool = False, readonly: bool = False):
    """A psycopg2 connection; commits on success, rolls back on error.
    ``readonly``: its transactions are READ ONLY (the extracts, whose query
    holds the release's scope).  A defined connection that cannot be reached
    raises WarehouseError; nothing is started in its place."""
    target, source = _target()
    try:
        conn = psycopg2.connect(target)
    except psycopg2.OperationalError as exc:
        if source is None:
            raise
        raise WarehouseError(f"the Airflow connection {CONN_ID!r} ({describe(source)}) cannot "
                             f"be reached: {_first_line(exc)}; no embedded warehouse "
                             "started in its place") from None
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
    """``start`` prints the DSN (a password masked: a terminal or a log is no
    place for it); ``init`` creates the schemas; ``stop`` stops the
    embedded server of each data directory (default ``var/warehouse``; ``--under
    DIR``: every one below DIR) and exits 1 if one could not be stopped."""
    cmd, rest = (argv[0], argv[1:]) if argv else ("start", [])
    if cmd == "stop":
        return _stop_command(rest)
    if cmd not in ("start", "init"):
        print(f"{USAGE} (got {cmd!r})", file=sys.stderr)
        return 2
    try:
        if cmd == "start":
            print(_masked(dsn()))
        else:
            ensure_schemas()
            print("schemas ready")
    except WarehouseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
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
    # through deid.warehouse, not this __main__ copy: the modules it calls raise
    # deid.warehouse.WarehouseError, which main() must catch
    from deid.warehouse import main as _main

    sys.exit(_main(sys.argv[1:]))
