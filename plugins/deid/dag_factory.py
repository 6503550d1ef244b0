"""One DAG per release file: the task order every release shares.

sweep -> prepare -> extract -> [screen_plan -> screen (one task per member range)
        -> screen_combine] -> privacy_policy -> <the release's method's steps>
        -> validate -> report -> load, with cleanup as the teardown of prepare;
verify_policy (PPE's verifier) runs beside the method's steps, between
privacy_policy and validate.
Partitioned steps (screening, a method's ``MAPPED`` steps) are mapped tasks
over batches, so Airflow's executor spreads them over its workers.
The release file fixes the method: the DAG has only its steps.  The trigger
form offers its parameters, prefilled from the file; Airflow validates them
(types, enums, bounds) before the run starts, and ``prepare`` decides the
run's parameters under the file's policy (``deid.overrides``) once, in
staging, for every task: a run the file does not allow fails there.
``sweep`` first closes the audit rows of the release's earlier runs that
were killed before they could (``deid.sweep``); the ``deid_maintenance``
DAG sweeps every release hourly.  Every step's task marks its run alive
while it works (``deid.steps.heartbeat``).
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import logging
import os

from deid import secret, steps, sweep
from deid.airflow_glue import (
    audit_base,
    current_run,
    no_retry_on_bad_data,
    on_task_failure,
)
from deid.methods import COMMON_PARAMS, METHODS, STRONGER
from deid.overrides import rule
from deid.releases import DAG_PREFIX, MAINTENANCE, Release, load_all_with_errors, load_for_dag

log = logging.getLogger(__name__)
UI_KEYS = ("title", "description", "default")
SCOPE_HELP = ("SQL filter over the claims (alias c): c.desynpuf_id and c.clm_from_dt, "
              "constants, comparisons, IN, BETWEEN, LIKE, AND/OR/NOT, IS NULL, casts and "
              "date/text functions; anything else (subqueries, other tables or functions) "
              "stops the run.")
RULE_HELP = {"fixed": "Fixed by the release file.", "any": "A trigger may change it.",
             "stronger": "A trigger may only make it stronger ({way}).",
             "narrower": "A trigger may only narrow it (ANDed with the release file's)."}


def form_params(release: Release) -> dict:
    """The trigger form: the release's method's parameters (and PPE's),
    prefilled from the file, each saying what a trigger may do with it."""
    from airflow.sdk import Param

    params = {"scope": Param(release.scope, type="string", title="Source scope",
                             description=f"{SCOPE_HELP} {_rule_help(release, 'scope')}",
                             section="Scope")}
    module = METHODS[release.method]
    for section, schemas in (("Privacy policy (PPE)", COMMON_PARAMS), (module.TITLE, module.PARAMS)):
        for name, schema in schemas.items():
            rest = {k: v for k, v in schema.items() if k not in UI_KEYS}
            params[name] = Param(release.params[name], title=schema["title"],
                                 description=f"{schema['description']} "
                                 f"{_rule_help(release, name)}", section=section, **rest)
    return params


def _rule_help(release: Release, name: str) -> str:
    how, way = rule(release, name), STRONGER.get(name)
    if how == "stronger" and way == "narrower":
        return RULE_HELP["narrower"]
    if how == "stronger":
        order = " < ".join(map(str, way)) if isinstance(way, tuple) else way
        return RULE_HELP[how].format(way=order)
    return RULE_HELP[how]


def release_dags() -> dict:
    """dag_id -> DAG for every good release file, each read and checked on
    its own (a bad file is logged and loses only its own DAG), or only the
    DAG Airflow's parsing context names, from its own file alone: a task's
    process parses the DAG file again before it runs and needs only its own
    DAG (Airflow's "optimizing DAG parsing delays during execution").  In a
    task's process (the CLI's ``dags test`` names a DAG but no task) the
    collector's objects are then frozen: its modules and DAG live until it
    exits, so full collections need not walk them again."""
    from airflow.sdk import get_parsing_context

    context = get_parsing_context()
    if context.dag_id is not None:
        releases = load_for_dag(context.dag_id)
    else:
        releases, errors = load_all_with_errors()
        for path, field, problem in errors:
            log.error("Release file %s has no DAG: field %r: %s", path.name, field, problem)
    dags = {}
    for release in releases:
        try:
            dags[release.dag_id] = build_dag(release)
        except Exception:  # one release's DAG must not take the others' down
            if context.dag_id is not None:
                raise
            log.exception("Release file %s has no DAG: it could not be built", release.path.name)
    if context.task_id is not None:
        gc.freeze()
    return dags


MAINTENANCE_DAG = DAG_PREFIX + MAINTENANCE


def retry_delay() -> dt.timedelta:
    """A failed task's first retry waits this long (``DEID_RETRY_DELAY_SECONDS``, default 30)."""
    return dt.timedelta(seconds=float(os.environ.get("DEID_RETRY_DELAY_SECONDS", "30")))


def alive(release_name: str):
    """A task body that marks its run alive while it works (``deid.sweep``)."""
    def wrap(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with steps.heartbeat(current_run(release_name)):
                return fn(*args, **kwargs)
        return wrapper
    return wrap


def maintenance_dags() -> dict:
    """``deid_maintenance``: hourly, close the audit rows and delete the
    staging of every release's runs that were killed (``deid.sweep``); none
    in another DAG's task process (which needs only its own DAG)."""
    from airflow.sdk import DAG, get_parsing_context, task

    if get_parsing_context().dag_id not in (None, MAINTENANCE_DAG):
        return {}
    with DAG(dag_id=MAINTENANCE_DAG, schedule="@hourly", start_date=dt.datetime(2026, 1, 1),
             catchup=False, max_active_runs=1, tags=["deid"], doc_md=sweep.__doc__,
             default_args={"owner": "deid"}) as dag:

        @task(task_id="sweep", retries=0)
        def sweep_all() -> list:
            return sweep.sweep_in_task()

        sweep_all()
    return {MAINTENANCE_DAG: dag}


def build_dag(release: Release):
    from airflow.sdk import DAG, get_current_context, task

    beating = alive(release.name)
    default_args = {"owner": "deid", "retries": 2, "retry_delay": retry_delay(),
                    "retry_exponential_backoff": True,
                    "on_failure_callback": on_task_failure(release.name, release.method)}
    doc = f"**{release.name}** (v{release.version}, `{release.path.name}`, method " \
          f"`{release.method}`): {release.description}\n\n{__doc__}"
    method = release.method

    def decided() -> dict:
        """What ``prepare`` decided for this run: params, scope, run_record."""
        return steps.run_params(current_run(release.name))

    with DAG(dag_id=release.dag_id, schedule=release.schedule, start_date=dt.datetime(2026, 1, 1),
             catchup=False, max_active_runs=1, params=form_params(release),
             default_args=default_args, tags=["deid", method], doc_md=doc) as dag:

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def prepare(params=None) -> dict:
            user = getattr(get_current_context()["dag_run"], "triggering_user_name", None)
            return steps.prepare(current_run(release.name), release, dict(params), user)

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def extract() -> dict:
            return steps.extract(current_run(release.name), decided()["scope"])

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def privacy_policy() -> dict:
            params = decided()["params"]
            return steps.privacy_policy(current_run(release.name), params["k"],
                                        params["ppe_filter"])

        @task
        @no_retry_on_bad_data
        @beating
        def screen_plan() -> list:
            run = decided()
            return steps.screen_plan(current_run(release.name), release.screening_policy,
                                     run["params"]["screen_batch_members"], run["scope"])

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def screen(batch: dict) -> dict:
            return steps.screen_batch(current_run(release.name), release.screening_policy,
                                      batch)

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def screen_combine(batches: list) -> dict:
            return steps.screen_combine(current_run(release.name), release.screening_policy,
                                        len(batches))

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def verify_policy() -> dict:
            return steps.verify_policy(current_run(release.name))

        @task(trigger_rule="none_failed_min_one_success", retries=0, multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def validate() -> dict:
            return steps.validate(current_run(release.name), method, decided()["params"],
                                  release.thresholds)

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def report() -> dict:
            run = decided()
            return steps.report(current_run(release.name), method, run["params"],
                                run["run_record"])

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        @beating
        def load(started: dict, extracted: dict, policy: dict, written: dict) -> dict:
            run, chosen = current_run(release.name), decided()
            audit = {**audit_base(release.name, method, chosen["params"], started["started_at"]),
                     **steps.audit_record(chosen["run_record"]),
                     "run_id": run.run_id, "input_rows": extracted["rows"],
                     "policy_versions": {"release_file": release.version,
                                         "screening": release.screening_policy,
                                         **steps.code_versions(run, release.codes)},
                     "risk_before": {"privacy_constraints": policy["constraints"]},
                     "metrics": {"extract": extracted, "ppe": policy,
                                 "screen": _screened(release)},
                     "report_path": written["report_path"]}
            return steps.load(run, method, chosen["params"], secret.token_key(),
                              release.destination, audit)

        @task(task_id="sweep", retries=0)
        def sweep_earlier() -> list:
            return sweep.sweep_in_task(release.name)

        @task(multiple_outputs=False)
        def cleanup() -> bool:
            return steps.cleanup(current_run(release.name))

        started, extracted, policy = prepare(), extract(), privacy_policy()
        checked = validate()
        if release.screening_policy:
            planned = screen_plan()
            extracted >> planned
            screen.expand(batch=planned) >> screen_combine(planned) >> policy
        else:
            extracted >> policy
        sweep_earlier() >> started >> extracted
        policy >> verify_policy() >> checked
        first, last = _method_chain(release.name, method, METHODS[method])
        policy >> first
        last >> checked
        written = report()
        loaded = load(started, extracted, policy, written)
        checked >> written >> loaded >> cleanup().as_teardown(setups=started)
    return dag


def _screened(release: Release) -> dict | None:
    """The screen task's figures, when the release screens."""
    if not release.screening_policy:
        return None
    from airflow.sdk import get_current_context

    return get_current_context()["ti"].xcom_pull(task_ids="screen_combine")


def _method_chain(release_name: str, method: str, module) -> tuple:
    """One task per step, each after the step before it, or after the step
    ``module.AFTER`` names; a step in ``module.MAPPED`` is one task per batch
    of the list its source step returned (dynamic task mapping).  Returns the
    first task and the tasks no other step waits for."""
    mapped, after = getattr(module, "MAPPED", {}), getattr(module, "AFTER", {})
    outputs: dict = {}
    waited_on: set[str] = set()
    for n, step in enumerate(module.STEPS):
        source = mapped.get(step)
        if source is None:
            outputs[step] = _method_task(release_name, method, step)()
        else:
            outputs[step] = _method_task(release_name, method, step).expand(
                batch=outputs[source])
        if n:
            up = after.get(step, module.STEPS[n - 1])
            outputs[up] >> outputs[step]
            waited_on.add(up)
    return outputs[module.STEPS[0]], [outputs[s] for s in module.STEPS if s not in waited_on]


def _method_task(release_name: str, method: str, step: str):
    from airflow.sdk import task

    @task(task_id=f"{method}_{step}", multiple_outputs=False)
    @no_retry_on_bad_data
    @alive(release_name)
    def run_step(batch=None) -> dict:
        run = current_run(release_name)
        decided = steps.run_params(run)
        return steps.method_step(run, method, step,
                                 {**decided["params"], "scope": decided["scope"]}, batch)

    return run_step
