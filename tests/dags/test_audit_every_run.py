"""A load task SIGKILLed on every try (issue 26 item 2).

A killed task runs no failure callback ("Callback requested but no callback
found"), so before the run's row was opened in ``prepare`` such a run ended
``failed`` in Airflow with no audit row at all.  Here a real ``airflow
standalone`` runs a release whose load waits in the swap (the test holds the
swap's lock) and each of the load's three tries is SIGKILLed by its pid.  The
run ends failed; the sweep (the release's next run's first task, or the
``deid_maintenance`` DAG the test triggers) closes its row ``failed`` with
why, and deletes its staging.  The previous release stays as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal

import pytest

from tests.integration.test_sweep import (DAG_ID, RELEASE, airflow, audit_rows, kill_tree,  # noqa: F401
                                          medco_source,
                                          previous_release, scheduler_pid, staged, start_run,
                                          swap_held, task_instance, wait_for, waiting_in_swap)

pytestmark = [pytest.mark.airflow, pytest.mark.warehouse, pytest.mark.ui]
TRIES = 3  # the release DAG's retries (2) + 1


def test_a_load_killed_on_every_try_is_audited_failed(medco_source, tmp_path):
    warehouse = medco_source
    before, since = previous_release(warehouse), dt.datetime.now(dt.timezone.utc)
    runs: set[str] = set()
    with swap_held(warehouse), airflow(tmp_path, "killed-load") as server:
        token = server.token()
        try:
            start_run(server, token)
            for n in range(1, TRIES + 1):
                run_id, pid = wait_for(f"try {n} of the load waiting in the swap",
                                       lambda: waiting_in_swap(server, token, n),
                                       timeout=300 if n == 1 else 120)
                runs.add(run_id)
                assert len(runs) == 1 and staged(run_id)
                os.kill(pid, signal.SIGKILL)
            assert server.wait_for_run(DAG_ID, run_id, timeout=120)["state"] == "failed"
            ti = task_instance(server, run_id, "load", token)
            assert ti["state"] == "failed" and ti["try_number"] == TRIES

            server.wait_for_dag(sweep_dag := "deid_maintenance", token)
            maintenance = server.trigger(sweep_dag, {}, token)
            assert server.wait_for_run(sweep_dag, maintenance, timeout=180)["state"] == "success"
            (outcome, error), = audit_rows(warehouse, run_id, since)
            assert outcome == "failed", error
            assert error == ("killed: Airflow ended the run failed but no task closed its audit "
                             "row (a killed task runs no failure callback); failed tasks: load")
            assert not staged(run_id)
            assert previous_release(warehouse) == before  # the lock is still held: no later load
        finally:
            with contextlib.suppress(LookupError):  # and its tasks, before the lock goes
                kill_tree(scheduler_pid(server.home))
