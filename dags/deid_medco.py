"""MedCo release of diagnosis codes per patient.

extract -> PPE privacy policy -> code clustering -> dummy patients -> validate
(Great Expectations + verifiers) -> atomic load with audit row.  Staging is
deleted at the end of every run, failed or not.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import Param, Variable, dag, task

from deid import steps
from deid.airflow_glue import audit_base, current_run, no_retry_on_bad_data, on_task_failure

RELEASE = "medco_codes"
METHOD = "medco"

PARAMS = {
    "k": Param(5, type="integer", minimum=2, maximum=1000, title="k (PPE)",
               description="A code combination supported by fewer than k records is a "
                           "privacy constraint."),
    "ppe_filter": Param("all-visits", enum=["all-visits", "single-visit"], title="PPE filter",
                        description="single-visit: codes per claim; all-visits: all codes "
                                    "of a patient."),
    "min_anonymity_set": Param(20, type="integer", minimum=1, maximum=100000,
                               title="Minimum anonymity set",
                               description="Fewest codes any frequency cluster may hold."),
    "n_clusters": Param(None, type=["null", "integer"], minimum=1, maximum=10000,
                        title="Number of code clusters",
                        description="Empty: chosen from the minimum anonymity set."),
    "seed": Param(20081, type="integer", minimum=0, maximum=2**31 - 1, title="Seed",
                  description="Seeds every random choice; recorded with the release."),
    "scope": Param("TRUE", type="string", title="Source scope",
                   description="SQL filter over the claims (alias c), e.g. "
                               "c.clm_from_dt >= '2009-01-01'."),
}

DEFAULT_ARGS = {"owner": "deid", "retries": 2, "retry_delay": dt.timedelta(seconds=30),
                "retry_exponential_backoff": True,
                "on_failure_callback": on_task_failure(RELEASE, METHOD)}


@dag(dag_id="deid_medco", schedule="@weekly", start_date=dt.datetime(2026, 1, 1),
     catchup=False, max_active_runs=1, params=PARAMS, default_args=DEFAULT_ARGS,
     tags=["deid", "medco", "ppe"], doc_md=__doc__)
def deid_medco():
    @task
    def prepare() -> dict:
        return steps.prepare(current_run(RELEASE))

    @task
    @no_retry_on_bad_data
    def extract(params=None) -> dict:
        return steps.extract(current_run(RELEASE), params["scope"])

    @task
    @no_retry_on_bad_data
    def privacy_policy(params=None) -> dict:
        return steps.privacy_policy(current_run(RELEASE), params["k"], params["ppe_filter"])

    @task
    @no_retry_on_bad_data
    def cluster_codes(params=None) -> dict:
        return steps.cluster_codes(current_run(RELEASE), params["min_anonymity_set"],
                                   params["n_clusters"])

    @task
    @no_retry_on_bad_data
    def dummies(params=None) -> dict:
        return steps.dummies(current_run(RELEASE), params["seed"])

    @task(retries=0)
    @no_retry_on_bad_data
    def validate(params=None) -> dict:
        return steps.validate_medco(current_run(RELEASE), params["k"], params["ppe_filter"])

    @task
    @no_retry_on_bad_data
    def load(started: dict, extracted: dict, policy: dict, clusters: dict, added: dict,
             params=None) -> dict:
        run = current_run(RELEASE)
        audit = {**audit_base(RELEASE, METHOD, dict(params), started["started_at"]),
                 "run_id": run.run_id, "input_rows": extracted["rows"],
                 "risk_before": {"privacy_constraints": policy["constraints"]},
                 "metrics": {"extract": extracted, "ppe": policy, "clusters": clusters,
                             "dummies": added}}
        return steps.load_medco(run, Variable.get("deid_token_key"), audit)

    @task
    def cleanup() -> bool:
        return steps.cleanup(current_run(RELEASE))

    started = prepare()
    extracted = extract()
    policy = privacy_policy()
    clusters = cluster_codes()
    added = dummies()
    checked = validate()
    loaded = load(started, extracted, policy, clusters, added)
    started >> extracted >> policy >> clusters >> added >> checked >> loaded
    loaded >> cleanup().as_teardown(setups=started)


deid_medco()
