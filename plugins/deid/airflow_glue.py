"""What DAG files need from Airflow's side: run identity, error mapping, audit
on failure.  Kept here so that the DAG files stay a table of contents."""

from __future__ import annotations

import datetime as dt
import functools
import subprocess

from anonymizers.errors import AnonymizerError
from deid import steps
from deid.paths import ROOT


def current_run(release: str) -> steps.Run:
    from airflow.sdk import get_current_context

    return steps.Run(release=release, run_id=get_current_context()["run_id"])


def no_retry_on_bad_data(fn):
    """Bad input and failed gates fail the task at once; other errors may retry.
    Their message is the whole story (file, row, field; never a value), so the
    task log gets that one line under Airflow's own frames, not the chain of
    the library's internals."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from airflow.sdk.exceptions import AirflowFailException

        try:
            return fn(*args, **kwargs)
        except (steps.ValidationFailed, AnonymizerError) as exc:
            raise AirflowFailException(str(exc)) from None
    return wrapper


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def audit_base(release: str, method: str, params: dict, started_at: str | None) -> dict:
    return {"release_name": release, "method": method, "params": params,
            "seed": int(params.get("seed", 0)), "code_version": code_version(),
            "started_at": started_at or dt.datetime.now(dt.timezone.utc).isoformat(),
            "policy_versions": {}}


def on_task_failure(release: str, method: str):
    """A task callback that writes the 'failed' audit row (the run's data stays
    out of it: only the task id and the exception's message)."""
    def callback(context):
        params = dict(context.get("params") or {})
        run = steps.Run(release, context["run_id"])
        ti = context.get("task_instance")
        error = f"{getattr(ti, 'task_id', '?')}: {context.get('exception')}"
        try:
            steps.record_failure(run, {**audit_base(release, method, params, None),
                                       "run_id": run.run_id}, error)
        finally:
            steps.cleanup(run)
    return callback
