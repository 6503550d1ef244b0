"""A mapped task's thread pools: its share of the cores, from the executor's
slots on one machine and the stage's instances (deid.task_threads)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from deid import task_threads


@pytest.mark.parametrize("cores, running, threads", [(2, 1, 2), (2, 2, 1), (8, 3, 2),
                                                      (1, 4, 1), (4, 0, 4)])
def test_share_of_the_cores(cores, running, threads):
    assert task_threads.share(cores, running) == threads


@pytest.mark.parametrize("executor, env, slots", [
    ("LocalExecutor", {"AIRFLOW__CORE__PARALLELISM": "3"}, 3),
    ("LocalExecutor,KubernetesExecutor", {"AIRFLOW__CORE__PARALLELISM": "5"}, 5),
    ("airflow.executors.local_executor.LocalExecutor", {"AIRFLOW__CORE__PARALLELISM": "2"}, 2),
    ("CeleryExecutor", {"AIRFLOW__CELERY__WORKER_CONCURRENCY": "6"}, 6),
    ("KubernetesExecutor", {"AIRFLOW__CORE__PARALLELISM": "3"}, None),
    ("LocalExecutor", {"AIRFLOW__CORE__PARALLELISM": "0"}, None),
])
def test_slots_of_one_machine_by_executor(monkeypatch, executor, env, slots):
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", executor)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert task_threads.host_slots() == slots


def test_threads_for_a_stage(monkeypatch):
    monkeypatch.delenv(task_threads.ENV, raising=False)
    monkeypatch.setattr(task_threads, "cores", lambda: 4)
    assert task_threads.threads_for(6, 2) == 2
    assert task_threads.threads_for(1, 2) == 4  # alone in its stage
    assert task_threads.threads_for(6, 32) == 1
    assert task_threads.threads_for(None, 2) is None  # not mapped: left alone
    assert task_threads.threads_for(6, None) is None  # a pod of its own
    monkeypatch.setenv(task_threads.ENV, "3")
    assert task_threads.threads_for(6, 2) == 3 and task_threads.threads_for(None, None) == 3


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_override_names_the_variable(monkeypatch, bad):
    monkeypatch.setenv(task_threads.ENV, bad)
    with pytest.raises(ValueError, match=f"{task_threads.ENV} must be a positive integer"):
        task_threads.threads_for(6, 2)


def test_apply_sizes_arrow_and_blas_pools():
    """In a process of its own: the pools are process-wide."""
    code = ("import json, pyarrow as pa, numpy\n"
            "from threadpoolctl import threadpool_info\n"
            "from deid import task_threads\n"
            "task_threads.apply(1)\n"
            "print(json.dumps([pa.cpu_count()] + [p['num_threads'] for p in threadpool_info()]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts[0] == 1 and len(counts) > 1 and set(counts[1:]) == {1}


def test_a_mapped_instance_in_its_own_process_gets_its_share(monkeypatch):
    """deid.airflow_glue.share_cores: sized in a task's own process, from the
    stage's instances in this run; left alone elsewhere (``dags test``)."""
    import airflow.sdk
    from deid import airflow_glue

    class TI:
        dag_id, task_id, run_id = "deid_x", "screen", "manual__1"

        @staticmethod
        def get_ti_count(dag_id, task_ids, run_ids):
            assert (dag_id, task_ids, run_ids) == ("deid_x", ["screen"], ["manual__1"])
            return 6

    applied = []
    monkeypatch.delenv(task_threads.ENV, raising=False)
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    monkeypatch.setenv("AIRFLOW__CORE__PARALLELISM", "2")
    monkeypatch.setattr(task_threads, "cores", lambda: 2)
    monkeypatch.setattr(task_threads, "apply", applied.append)
    monkeypatch.setattr(airflow.sdk, "get_current_context", lambda: {"ti": TI})
    monkeypatch.setattr(task_threads, "_task_process", False)
    assert airflow_glue.share_cores() is None and applied == []
    task_threads.mark_task_process()
    assert task_threads.in_task_process() and airflow_glue.share_cores() == 1
    assert applied == [1]
