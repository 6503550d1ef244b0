"""Close what runs killed before they could say so left open.

A run opens its audit row ``running`` in ``prepare`` and closes it at its
end (``deid.load``).  A task killed with SIGKILL runs no failure callback,
and a crashed scheduler leaves its run "running" in Airflow: their rows stay
open and their staging (patient-level Parquet) stays on disk.  The sweep
closes such a row ``failed``, with why, and deletes the run's staging.  The
previous release is not touched (a killed load never committed its swap).

Which runs are over is Airflow's view of the run, with the run's own
heartbeat (``deid.steps.heartbeat``, a file in its staging) where Airflow's
view cannot be trusted:

* Airflow has the run ``failed`` or ``success``: over (its tasks ended without
  closing the row: one was killed).
* Airflow has it ``queued`` or ``running``: live, unless ``stale_after`` is
  given and no task of the run has beaten for that long (a scheduler or its
  workers died: Airflow's view stays "running" until it is restarted).  Inside
  Airflow (a release's first task, the ``deid_maintenance`` DAG) the scheduler
  is alive and fails dead tasks itself, so there the sweep trusts its view
  and gives no ``stale_after``; ``python -m deid.sweep --stale-after`` is for
  an operator (or cron) when the scheduler is down.
* Airflow does not know the run, or cannot say: never touched.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
import time
from dataclasses import dataclass
from typing import Callable

from deid import load, staging, steps
from deid.releases import DAG_PREFIX
from deid.warehouse import connect

log = logging.getLogger(__name__)
ENDED = ("failed", "success")
LIVE = ("queued", "running")

#: (dag_id, run_id) -> Airflow's state of the run, or None when it cannot say
RunState = Callable[[str, str], "str | None"]
#: (dag_id, run_id) -> {task_id: state} of the run's tasks
TaskStates = Callable[[str, str], dict]


@dataclass(frozen=True)
class Closed:
    release: str
    run_id: str
    reason: str
    row_closed: bool
    staging_deleted: bool


def open_runs(release: str | None = None) -> list[tuple[str, str]]:
    """(release, run_id) of every run with an open audit row or with staging."""
    rows = [(r["release_name"], r["run_id"]) for r in load.open_runs(release)]
    return list(dict.fromkeys(rows + staging.staged_runs(release)))


def sweep(run_state: RunState, task_states: TaskStates | None = None,
          release: str | None = None, exclude: tuple = (),
          stale_after: float | None = None, now: float | None = None) -> list[Closed]:
    """Close every open run of ``release`` (all releases if None) that is
    over, but those of ``exclude`` (run ids); returns what it closed."""
    closed = []
    for name, run_id in open_runs(release):
        if run_id in exclude:
            continue
        dag_id = DAG_PREFIX + name
        try:
            state = _value(run_state(dag_id, run_id))
        except Exception:  # noqa: BLE001 - Airflow cannot say: leave the run alone
            log.exception("Sweep: no state for run %s of %s: left alone", run_id, dag_id)
            continue
        reason = why_over(state, staging.last_beat(name, run_id), stale_after,
                          time.time() if now is None else now)
        if reason is None:
            continue
        if state in ENDED and task_states is not None:
            reason += _failed_tasks(task_states, dag_id, run_id)
        closed.append(close(name, run_id, reason))
    return closed


def why_over(state: str | None, last_beat: float | None, stale_after: float | None,
             now: float) -> str | None:
    """Why a run whose row is open is over, or None if it may be live."""
    if state in ENDED:
        return (f"killed: Airflow ended the run {state} but no task closed its audit row "
                "(a killed task runs no failure callback)")
    if state in LIVE and stale_after is not None and last_beat is not None \
            and now - last_beat > stale_after:
        since = dt.datetime.fromtimestamp(last_beat, dt.timezone.utc).isoformat(timespec="seconds")
        return (f"killed: no heartbeat since {since} while Airflow still shows the run "
                f"{state} (its scheduler or workers stopped)")
    return None


def _failed_tasks(task_states: TaskStates, dag_id: str, run_id: str) -> str:
    try:
        states = task_states(dag_id, run_id)
    except Exception:  # noqa: BLE001 - the reason stands without the task list
        log.exception("Sweep: no task states for run %s of %s", run_id, dag_id)
        return ""
    failed = sorted(t for t, s in states.items() if s == "failed")
    return f"; failed tasks: {', '.join(failed)}" if failed else ""


def close(release: str, run_id: str, reason: str) -> Closed:
    """Close the run's open row as failed with ``reason`` (and what ``prepare``
    decided, read from staging first) and delete its staging."""
    run = steps.Run(release, run_id)
    with connect() as conn, conn.cursor() as cur:
        row_closed = load.close_open(cur, {**steps.run_columns(run), "release_name": release,
                                           "run_id": run_id, "outcome": "failed",
                                           "error": reason})
    deleted = steps.cleanup(run)
    log.warning("Sweep closed run %s of release %s (row %s, staging %s): %s", run_id, release,
                "closed" if row_closed else "already closed",
                "deleted" if deleted else "none", reason)
    return Closed(release, run_id, reason, row_closed, deleted)


# -- Airflow's view --------------------------------------------------------

def in_task_views() -> tuple[RunState, TaskStates]:
    """Airflow's view from inside a task (the task SDK's execution API)."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance as TI

    def run_state(dag_id: str, run_id: str) -> str | None:
        return TI.get_dagrun_state(dag_id, run_id)

    def task_states(dag_id: str, run_id: str) -> dict:
        return _plain(TI.get_task_states(dag_id, run_ids=[run_id]).get(run_id, {}))

    return run_state, task_states


def metadata_views() -> tuple[RunState, TaskStates]:
    """Airflow's view from its metadata database (outside a task: the CLI)."""
    from airflow.models import DagRun, TaskInstance
    from airflow.utils.session import create_session

    def run_state(dag_id: str, run_id: str) -> str | None:
        with create_session() as session:
            run = session.query(DagRun).filter_by(dag_id=dag_id, run_id=run_id).one_or_none()
            return None if run is None else _value(run.state)

    def task_states(dag_id: str, run_id: str) -> dict:
        with create_session() as session:
            tis = session.query(TaskInstance).filter_by(dag_id=dag_id, run_id=run_id).all()
            return {ti.task_id: _value(ti.state) for ti in tis}

    return run_state, task_states


def _plain(states: dict) -> dict:
    return {task: _value(state) for task, state in states.items()}


def _value(state):
    """A state as its plain string (Airflow's enums print as their class)."""
    return getattr(state, "value", state)


def sweep_in_task(release: str | None = None) -> list[dict]:
    """The sweep as a task: a release's first (its other runs) or the
    maintenance DAG's (every release)."""
    from airflow.sdk import get_current_context

    run_state, task_states = in_task_views()
    me = get_current_context()["run_id"]
    return [c.__dict__ for c in sweep(run_state, task_states, release, exclude=(me,))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deid.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", help="only this release (default: all)")
    parser.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                        help="also close runs Airflow shows running whose tasks have not "
                             "beaten for this long (the scheduler is down)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    run_state, task_states = metadata_views()
    for c in sweep(run_state, task_states, args.release, stale_after=args.stale_after):
        print(f"closed {c.release} {c.run_id}: {c.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
