"""Thread pools of a mapped task's process, sized to its share of the cores.

The instances of a mapped task (screening ranges, disassociation and
verification batches, HHP lattice parts) run side by side and fill the
workers: a LocalExecutor runs up to ``[core] parallelism`` tasks at once on
its machine, a Celery worker ``[celery] worker_concurrency``.  Arrow's CPU
pool and the BLAS pools start one thread per core in every process, so at
full load the machine runs that many busy threads per task on its cores,
and their switching and waiting cost CPU the tasks share.  As for any
multi-process worker (``OMP_NUM_THREADS=1`` under joblib or Dask), each
mapped instance gets ``cores // instances running at once`` threads, at
least one (``benchmarks/bench_stage_ceiling``: the 113k screening ranges two
at a time on two cores took 3.6-3.8 s with a thread per core in each
process and 3.4-3.6 s with one).  A task that runs alone, or a stage of one
instance, keeps every core; so does a task under an executor that gives
each task a machine or pod of its own (Kubernetes), whose cores are its own.

``DEID_TASK_THREADS`` (a positive integer) sets the size instead.
"""

from __future__ import annotations

import os

ENV = "DEID_TASK_THREADS"
_task_process = False  # see mark_task_process


def mark_task_process() -> None:
    """Note that this process runs one task: the DAG file was parsed for a
    task Airflow's parsing context names (``deid.dag_factory.release_dags``),
    which only a task's own process does.  ``dags test`` runs every task, one
    after another, in one process, where nothing shares the cores."""
    global _task_process
    _task_process = True


def in_task_process() -> bool:
    return _task_process


def cores() -> int:
    return len(os.sched_getaffinity(0))


def host_slots() -> int | None:
    """Tasks one machine runs at once under the configured (first) executor, or
    None when the executor gives each task its own machine or pod."""
    from airflow.sdk.configuration import conf

    executor = conf.get("core", "executor").split(",")[0].strip().rsplit(".", 1)[-1]
    if executor == "LocalExecutor":
        slots = conf.getint("core", "parallelism")
    elif executor == "CeleryExecutor":
        slots = conf.getint("celery", "worker_concurrency", fallback=16)
    else:
        return None
    return slots if slots > 0 else None


def share(n_cores: int, running: int) -> int:
    """Threads per process when ``running`` processes share ``n_cores`` cores."""
    return max(1, n_cores // max(1, running))


def threads_for(instances: int | None, slots: int | None) -> int | None:
    """The pool size for one of ``instances`` mapped instances on a machine of
    ``slots`` task slots (None: leave the pools as they are)."""
    override = os.environ.get(ENV)
    if override:
        if not override.isdigit() or int(override) < 1:
            raise ValueError(f"{ENV} must be a positive integer, not {override!r}")
        return int(override)
    if not instances or slots is None:
        return None
    return share(cores(), min(instances, slots))


def apply(threads: int) -> None:
    """Arrow's CPU pool and the BLAS/OpenMP pools of this process get ``threads``."""
    import pyarrow as pa
    from threadpoolctl import threadpool_limits

    pa.set_cpu_count(threads)
    threadpool_limits(limits=threads)


def size_for_mapped(instances: int | None) -> int | None:
    """Size this process's pools for one of ``instances`` mapped instances;
    the size chosen, or None if the pools were left as they are."""
    threads = threads_for(instances, host_slots() if not os.environ.get(ENV) else None)
    if threads is not None:
        apply(threads)
    return threads
