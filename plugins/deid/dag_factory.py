"""One DAG per release file: the task order every release shares.

prepare -> extract -> [screen_plan -> screen (one task per member range)
        -> screen_combine] -> privacy_policy -> choose_method -> <method's steps>
        -> validate -> report -> load, with cleanup as the teardown of prepare;
verify_policy (PPE's verifier) runs beside the method's steps, between
privacy_policy and validate.
Partitioned steps (screening, a method's ``MAPPED`` steps) are mapped tasks
over batches, so Airflow's executor spreads them over its workers.
The trigger form offers every method with its parameters in a section of
its own, prefilled from the release file; Airflow validates them (types,
enums, bounds) before the run starts, and ``choose_method`` re-checks the
chosen method's parameters together.
"""

from __future__ import annotations

import datetime as dt
import gc

from deid import secret, steps
from deid.airflow_glue import (
    audit_base,
    current_run,
    no_retry_on_bad_data,
    on_task_failure,
)
from deid.methods import COMMON_PARAMS, METHODS, check_params, param_schemas
from deid.releases import Release, load_all

UI_KEYS = ("title", "description", "default")


def form_params(release: Release) -> dict:
    from airflow.sdk import Param

    params = {
        "method": Param(release.method, enum=sorted(METHODS), title="Method",
                        description="The anonymization method of this run.", section="Method"),
        "scope": Param(release.scope, type="string", title="Source scope",
                       description="SQL filter over the claims (alias c): c.desynpuf_id and "
                       "c.clm_from_dt, constants, comparisons, IN, BETWEEN, LIKE, AND/OR/NOT, "
                       "IS NULL, casts and date/text functions; anything else (subqueries, "
                       "other tables or functions) stops the run.", section="Method"),
    }
    sections = [("Privacy policy (PPE)", COMMON_PARAMS)]
    sections += [(module.TITLE, module.PARAMS) for module in METHODS.values()]
    for section, schemas in sections:
        for name, schema in schemas.items():
            if name in params:
                continue  # shared by two methods: one field
            value = release.params.get(name, schema["default"])
            rest = {k: v for k, v in schema.items() if k not in UI_KEYS}
            params[name] = Param(value, title=schema["title"], description=schema["description"],
                                 section=section, **rest)
    return params


def method_params(params: dict) -> dict:
    """The chosen method's parameters (plus the common ones), as the audit records them."""
    return {name: params[name] for name in param_schemas(params["method"]) if name in params}


def release_dags() -> dict:
    """dag_id -> DAG for every release file (each is read and checked), or
    only the DAG Airflow's parsing context names: a task's process parses the
    DAG file again before it runs and needs only its own DAG (Airflow's
    "optimizing DAG parsing delays during execution").  In a task's process
    (the CLI's ``dags test`` names a DAG but no task) the collector's objects
    are then frozen: its modules and DAG live until it exits, so full
    collections need not walk them again."""
    from airflow.sdk import get_parsing_context

    context = get_parsing_context()
    dags = {r.dag_id: build_dag(r) for r in load_all() if context.dag_id in (None, r.dag_id)}
    if context.task_id is not None:
        gc.freeze()
    return dags


def build_dag(release: Release):
    from airflow.sdk import DAG, task

    default_args = {"owner": "deid", "retries": 2, "retry_delay": dt.timedelta(seconds=30),
                    "retry_exponential_backoff": True,
                    "on_failure_callback": on_task_failure(release.name, release.method)}
    doc = f"**{release.name}** (v{release.version}, `{release.path.name}`): " \
          f"{release.description}\n\n{__doc__}"
    with DAG(dag_id=release.dag_id, schedule=release.schedule, start_date=dt.datetime(2026, 1, 1),
             catchup=False, max_active_runs=1, params=form_params(release),
             default_args=default_args, tags=["deid", release.method], doc_md=doc) as dag:

        @task(multiple_outputs=False)
        def prepare() -> dict:
            return steps.prepare(current_run(release.name))

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def extract(params=None) -> dict:
            return steps.extract(current_run(release.name), params["scope"])

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def privacy_policy(params=None) -> dict:
            return steps.privacy_policy(current_run(release.name), params["k"],
                                        params["ppe_filter"])

        @task
        @no_retry_on_bad_data
        def screen_plan(params=None) -> list:
            return steps.screen_plan(current_run(release.name), release.screening_policy,
                                     params["screen_batch_members"], params["scope"])

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def screen(batch: dict) -> dict:
            return steps.screen_batch(current_run(release.name), release.screening_policy,
                                      batch)

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def screen_combine(batches: list) -> dict:
            return steps.screen_combine(current_run(release.name), release.screening_policy,
                                        len(batches))

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def verify_policy(params=None) -> dict:
            return steps.verify_policy(current_run(release.name))

        @task.branch(retries=0)
        @no_retry_on_bad_data
        def choose_method(params=None) -> str:
            check_params(params["method"], method_params(params))
            return f"{params['method']}_{METHODS[params['method']].STEPS[0]}"

        @task(trigger_rule="none_failed_min_one_success", retries=0, multiple_outputs=False)
        @no_retry_on_bad_data
        def validate(params=None) -> dict:
            return steps.validate(current_run(release.name), params["method"],
                                  method_params(params), release.thresholds)

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def report(params=None) -> dict:
            return steps.report(current_run(release.name), params["method"],
                                method_params(params))

        @task(multiple_outputs=False)
        @no_retry_on_bad_data
        def load(started: dict, extracted: dict, policy: dict, written: dict,
                 params=None) -> dict:
            run = current_run(release.name)
            chosen = method_params(params)
            audit = {**audit_base(release.name, params["method"], chosen, started["started_at"]),
                     "run_id": run.run_id, "input_rows": extracted["rows"],
                     "policy_versions": {"release_file": release.version,
                                         "screening": release.screening_policy},
                     "risk_before": {"privacy_constraints": policy["constraints"]},
                     "metrics": {"extract": extracted, "ppe": policy,
                                 "screen": _screened(release)},
                     "report_path": written["report_path"]}
            return steps.load(run, params["method"], chosen, secret.token_key(),
                              release.destination, audit)

        @task(multiple_outputs=False)
        def cleanup() -> bool:
            return steps.cleanup(current_run(release.name))

        started, extracted, policy = prepare(), extract(), privacy_policy()
        chooser, checked = choose_method(), validate()
        if release.screening_policy:
            planned = screen_plan()
            extracted >> planned
            screen.expand(batch=planned) >> screen_combine(planned) >> policy
        else:
            extracted >> policy
        started >> extracted
        policy >> chooser
        policy >> verify_policy() >> checked
        for method, module in METHODS.items():
            first, last = _method_chain(release.name, method, module)
            chooser >> first
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
    def run_step(batch=None, params=None) -> dict:
        return steps.method_step(current_run(release_name), method, step,
                                 {**method_params(params), "scope": params["scope"]}, batch)

    return run_step
