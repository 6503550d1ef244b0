"""The pipeline's steps, one function per DAG task.

Each step reads its inputs from the run's staging folder, writes its outputs
there and returns only small things (counts, metrics, verdicts) for XCom.
The anonymization itself is the ``anonymizers`` library's; the method
modules in ``deid.methods`` adapt it to staging files.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from deid import extract as extract_mod
from deid import load as load_mod
from deid import cross_release, history, methods, screening, staging, validation
from deid import parquet_io as pio
from deid.append_only import NOTHING_NEW
from deid.methods import METHODS
from deid.warehouse import ensure_schemas


class ValidationFailed(Exception):
    """A release failed a gate: the run must stop without loading (and without retry)."""


@dataclass(frozen=True)
class Run:
    release: str
    run_id: str

    @property
    def dir(self) -> Path:
        return staging.run_dir(self.release, self.run_id)

    def path(self, name: str) -> Path:
        return self.dir / name

    def write_json(self, name: str, obj) -> None:
        self.path(name).write_text(json.dumps(obj, default=str))

    def read_json(self, name: str):
        return json.loads(self.path(name).read_text())

    @staticmethod
    def small(metrics: dict) -> dict:
        """Scalars only: XCom and the audit row carry figures, not data."""
        return {k: v for k, v in metrics.items()
                if isinstance(v, (int, float, str, bool)) or v is None}


RUN_PARAMS = staging.RUN_PARAMS  # an alias for tests/integration/test_sweep.py


def prepare(run: Run, release=None, requested: dict | None = None,
            triggered_by: str | None = None) -> dict:
    """The run's audit row, opened ``running`` before anything is staged (so
    that a run killed later still has one, for ``deid.sweep`` to close),
    staging, and the run's parameters under its release file's policy
    (``deid.overrides``), decided once for every task: a run the file does
    not allow stops here, before anything is extracted."""
    ensure_schemas()
    load_mod.drop_stale_builds(run.release, run.run_id)
    started = dt.datetime.now(dt.timezone.utc).isoformat()
    code_files = {}
    if release is not None:
        code_files = release.codes.versions()
        _open_audit(run, release, requested or {}, triggered_by, started,
                    {"release_file": release.version, **code_files})
    run.dir  # noqa: B018 - creates the owner-only staging folder
    if release is not None:
        _resolve_run(run, release, requested or {}, triggered_by, code_files)
    return {"started_at": started}


def _open_audit(run: Run, release, requested: dict, triggered_by: str | None,
                started: str, versions: dict) -> None:
    """The open row holds what the trigger asked; its closing writes what ran."""
    from deid.airflow_glue import audit_base

    params = {**release.params, **requested}
    load_mod.open_audit({**audit_base(release.name, release.method, params, started),
                         "run_id": run.run_id, "triggered_by": triggered_by,
                         "policy_versions": versions})


def code_versions(run: Run, codes) -> dict:
    """The code files' versions ``prepare`` recorded (the GEM's sha256), after
    checking that the file under the same path is still that one: a mapping
    replaced during the run would leave the release made of two mappings, or
    the audit naming one it did not use; that run loads nothing."""
    staged = run_params(run).get("code_versions", {})
    now = codes.versions()
    if now != staged:
        raise ValidationFailed(f"the GEM at {codes.gem} changed during the run (sha256 "
                               f"{staged.get('gem_sha256', 'none')[:12]} at its start, "
                               f"{now.get('gem_sha256', 'none')[:12]} now): nothing loaded")
    return staged


def _resolve_run(run: Run, release, requested: dict, triggered_by: str | None,
                 code_files: dict) -> None:
    from deid import overrides

    record = {"triggered_by": triggered_by, "scope": None, "overrides": {}}
    try:
        resolved = overrides.resolve(release, requested)
    except overrides.OverrideRefused as exc:
        run.write_json(staging.RUN_PARAMS, {
            "params": None, "scope": None,
            "run_record": {**record, "overrides": exc.requested}})
        raise ValidationFailed(str(exc)) from exc
    run.write_json(staging.RUN_PARAMS, {
        "params": resolved.params, "scope": resolved.scope, "codes": release.codes.as_dict(),
        "code_versions": code_files, "run_record": {**record, "scope": resolved.scope, "overrides": resolved.overrides}})


def run_params(run: Run) -> dict:
    """``{"params", "scope", "codes", "run_record"}`` as ``prepare`` decided them."""
    return run.read_json(staging.RUN_PARAMS)


def code_policy(run: Run):
    """The release file's ``CodePolicy`` for this run (ICD-9-CM's defaults for
    a run prepared without a release, as tests and scripts do)."""
    from deid.releases import CodePolicy

    path = run.path(staging.RUN_PARAMS)
    staged = json.loads(path.read_text()).get("codes") if path.exists() else None
    return CodePolicy(**staged) if staged else CodePolicy()


def extract(run: Run, scope: str = "TRUE") -> dict:
    """The claims of the scope, their codes checked against the release
    file's code system (``deid.extract``)."""
    t0 = time.perf_counter()
    stats = extract_mod.extract_to_parquet(run.path(staging.CLAIMS), scope, code_policy(run))
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    if stats["rows"] == 0:
        raise ValidationFailed("the release's scope selects no claims: nothing to release")
    return stats


def _screening_policy(policy_version: str):
    """The bundled screening policy the release file names (ICD-9 or ICD-10)."""
    from anonymizers.errors import InputError

    try:
        return screening.load_policy(policy_version)
    except InputError as exc:
        raise ValidationFailed(str(exc)) from exc


def screen_plan(run: Run, policy_version: str, batch_members: int,
                scope: str = "TRUE") -> list[dict]:
    """HHP screening (seed 004 section 2) before any method, per member range:
    the ranges and their claims (see ``deid.screening``), one ``{"index": i}`` each."""
    _screening_policy(policy_version)
    return screening.plan(run, batch_members, scope, code_policy(run))


def screen_batch(run: Run, policy_version: str, batch: dict) -> dict:
    """Members of one range with a listed diagnosis or procedure."""
    return screening.batch(run, _screening_policy(policy_version), batch["index"])


def screen_combine(run: Run, policy_version: str, n_batches: int) -> dict:
    """The removed members leave the extract, all their rows with them."""
    out = screening.combine(run, n_batches)
    if out["rows_kept"] == 0:
        raise ValidationFailed("screening removed every member: nothing to release")
    return {"policy_version": policy_version, "batches": n_batches, **out}


def screen(run: Run, policy_version: str, scope: str = "TRUE",
           batch_members: int = 20_000) -> dict:
    """All of screening in this process (tests, scripts)."""
    batches = screen_plan(run, policy_version, batch_members, scope)
    for b in batches:
        screen_batch(run, policy_version, b)
    return screen_combine(run, policy_version, len(batches))


def claims(run: Run, columns=None) -> pd.DataFrame:
    return pd.read_parquet(run.path(staging.CLAIMS), columns=columns)


VERIFY_ROWS = 1_000_000  # most claims per batch of whole patients of the verifiers
VISIT_COLUMNS = ["patient_id", "claim_id", "code"]  # a visit is a claim


def _as_visits(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={"claim_id": "visit_id"})


def _visit_batches(run: Run):
    """patient_id, visit_id (a visit is a claim, for the single-visit filter)
    and code, in batches of whole patients (ranges of sorted ids), re-read
    on every call, so that the verifier holds one batch at a time."""
    path = run.path(staging.CLAIMS)
    ranges = pio.id_ranges(path, "patient_id", VERIFY_ROWS)

    def batches():
        for lo, hi in ranges:
            yield _as_visits(pio.rows_between(path, "patient_id", lo, hi, VISIT_COLUMNS))

    return batches


def privacy_policy(run: Run, k: int, filter: str) -> dict:
    """PPE on the extracted claims: its constraints are the risk before.  The
    claims are read a row group at a time; PPE keeps their sparse form."""
    from anonymizers.ppe import PPEConfig, extract_policy_batches

    groups = map(_as_visits, pio.row_groups(run.path(staging.CLAIMS), VISIT_COLUMNS))
    result = extract_policy_batches(groups, PPEConfig(k=k, filter=filter),
                                    source=staging.CLAIMS)
    policy = result.to_dict()
    run.write_json(staging.POLICY, policy)
    return {"constraints": len(policy["constraints"]), **Run.small(result.metrics)}


def method_step(run: Run, method: str, step: str, params: dict, batch: dict | None = None) -> dict:
    fn = getattr(METHODS[method], step)
    return fn(run, params) if batch is None else fn(run, params, batch)


def verify_policy(run: Run) -> dict:
    """PPE's verifier on the staged claims, a batch of whole patients at a
    time, beside the method's steps; ``validate`` reads its verdict."""
    from anonymizers.verify.ppe import verify_policy_batches

    policy = run.read_json(staging.POLICY)  # the verifier drops its constraints once parsed
    verdict = verify_policy_batches(_visit_batches(run), policy.pop("constraints"),
                                    policy["k"], policy["filter"]).as_dict()
    run.write_json(staging.POLICY_VERDICT, verdict)
    return {"ok": verdict["ok"], "checked": verdict["checked"]}


def validate(run: Run, method: str, params: dict, thresholds: dict) -> dict:
    """GX gates on every release table, the verifiers' verdicts, the release
    beside every earlier release of its history (``check_history``) and the
    thresholds."""
    if not run.path(staging.POLICY_VERDICT).exists():
        raise ValidationFailed("the privacy policy was not verified (no verify_policy verdict)")
    module = METHODS[method]
    source = source_index(run)
    verdicts = [run.read_json(staging.POLICY_VERDICT), *module.verify(run, params),
                *check_history(run, method, params),
                *_threshold_verdicts(methods.metrics(run), thresholds)]
    gates = []
    for table, frame, expectations in module.gates(run, params, source):
        gates += validation.run_suite(table, frame, expectations)
    gates += validation.run_suite("verdicts", validation.verdict_table(verdicts),
                                  validation.verdict_expectations())
    run.write_json(staging.VERDICTS, {"verdicts": verdicts, "gates": [g.as_dict() for g in gates]})
    failed = [g for g in gates if not g.ok]
    if failed:
        bad = [v["property"] for v in verdicts if not v["ok"]]
        raise ValidationFailed("release failed validation: " + "; ".join(
            f"{g.table}: {g.expectation}({g.kwargs})" for g in failed)
            + (f"; failed verdicts: {bad}" if bad else ""))
    return {"gates": len(gates), "verdicts": {v["property"]: v["ok"] for v in verdicts}}


def check_history(run: Run, method: str, params: dict) -> list[dict]:
    """The new release together with every release published before it
    (``deid.history``), by the library's independent cross-release verifier:
    a release safe alone but not beside the earlier ones fails validate,
    before anything is loaded.  The earlier releases' run ids are staged
    first, so that the audit row names them whether the run loads or fails."""
    earlier = history.published(run.release, before=run.run_id)
    run.write_json(staging.CHECKED_AGAINST, [p.run_id for p in earlier])
    return cross_release.verdicts(run, method, params, earlier)


def checked_against(run: Run) -> list | None:
    """The run ids ``check_history`` checked the release against (None before validate)."""
    path = staging.run_dir(run.release, run.run_id, create=False) / staging.CHECKED_AGAINST
    return json.loads(path.read_text()) if path.exists() else None


def method_state(method: str, run: Run) -> dict:
    """The state the method keeps between runs (its ``state_parts``; MedCo's
    persisted dummies), stored with the load."""
    parts = getattr(METHODS[method], "state_parts", None)
    return {} if parts is None else parts(run)


@dataclass(frozen=True)
class SourceIndex:
    """What the gates need of the staged claims: sorted distinct codes and
    patient ids (small indexes, read row group by row group)."""

    codes: np.ndarray
    patients: np.ndarray


def source_index(run: Run) -> SourceIndex:
    path = run.path(staging.CLAIMS)
    return SourceIndex(pio.distinct(path, "code"), pio.distinct(path, "patient_id"))


def _threshold_verdicts(metrics: dict, thresholds: dict) -> list[dict]:
    """``max_<metric>`` / ``min_<metric>`` thresholds of the release file.  A
    figure missing fails its threshold, except in a run whose method says it
    published nothing new (``NOTHING_NEW``: a successive release that held
    back every arrival and carries the published rows, each checked by its
    own run's thresholds): there it is not measured, and the verdict says so."""
    out = []
    for name, limit in thresholds.items():
        bound, _, metric = name.partition("_")
        value = metrics.get(metric)
        verdict = {"property": f"threshold {metric} {'<=' if bound == 'max' else '>='} {limit}"}
        if value is None and metrics.get(NOTHING_NEW) is True:
            out.append({**verdict, "ok": True, "checked": 0, "violations": [],
                        "note": "not measured: nothing new published"})
            continue
        ok = value is not None and (value <= limit if bound == "max" else value >= limit)
        out.append({**verdict, "ok": bool(ok), "checked": 1,
                    "violations": [] if ok else [_why_failed(metric, value, metrics)]})
    return out


def _why_failed(metric: str, value, metrics: dict) -> str:
    if value is not None:
        return f"{metric} = {value}"
    why = (metrics.get(staging.NOT_MEASURED) or {}).get(metric)
    if why is None:
        why = ("the method wrote it as not measured, without a reason" if metric in metrics
               else "the method wrote no such figure")
    return f"{metric} was not measured by this run: {why}"


def report(run: Run, method: str, params: dict, run_record: dict | None = None) -> dict:
    """The release's HTML report (kept with the release, outside staging);
    ``run_record`` (who triggered, scope, overrides) goes in with the parameters."""
    from deid.report import policy_figure, write_report

    module = METHODS[method]
    policy = run.read_json(staging.POLICY)
    figures = [("Risk before: privacy constraints found by PPE", policy_figure(policy)),
               *module.figures(run, params)]
    shown = {**params, "run_record": run_record} if run_record is not None else params
    path = write_report(run.release, run.run_id, method, shown, methods.metrics(run),
                        run.read_json(staging.VERDICTS), figures)
    return {"report_path": str(path)}


def load(run: Run, method: str, params: dict, token_key: str, table: str,
         audit: dict) -> dict:
    """Build every release table, then swap them in with the audit row and
    the release's entry in the history (``deid.history``)."""
    checked = checked_against(run)
    if checked is None:
        raise ValidationFailed("the release was not checked against its history (no validate)")
    module = METHODS[method]
    frames = module.release_tables(run, params, token_key)
    t0 = time.perf_counter()
    built = load_mod.build_all(run.release, run.run_id, table, frames)
    copy_seconds = time.perf_counter() - t0
    published = {"entry": {"method": method, "scope": run_params(run)["scope"],
                           "params": params, "fingerprint": history.fingerprint(frames),
                           "checked_against": checked},
                 "parts": history.parts(cross_release.kept(run, method, params),
                                        method_state(method, run))}
    restricted = {**methods.restricted(method, run, params, token_key),
                  "policy": run.read_json(staging.POLICY), "history": published}
    rows = sum(len(f) for f in frames.values())
    verdicts = run.read_json(staging.VERDICTS)
    figures = methods.metrics(run)
    versions = {**audit.get("policy_versions", {}),
                **({f"{method}_policy": figures["policy_version"]}
                   if "policy_version" in figures else {})}
    load_mod.swap(run.release, run.run_id, built, restricted,
                  {**audit, "output_rows": rows, "policy_versions": versions,
                   "checked_against": checked,
                   "metrics": {**audit.get("metrics", {}), method: figures},
                   "verdicts": verdicts, "risk_after": risk_after(verdicts, figures)})
    return {"tables": sorted(built.values()), "rows": rows,
            "copy_seconds": round(copy_seconds, 3)}


RISK_KEYS = ("dis", "risk", "below_k", "uniquely", "constraints_satisfied", "unsatisfied")


def risk_after(verdicts: dict, metrics: dict) -> dict:
    """What the release guarantees, as verified, and the method's own risk figures."""
    return {"guarantees_verified": {v["property"]: v["ok"] for v in verdicts["verdicts"]
                                    if not v["property"].startswith("threshold")},
            **{k: v for k, v in metrics.items() if any(r in k for r in RISK_KEYS)}}


def record_failure(run: Run, audit: dict, error: str) -> bool:
    """Close the run's audit row as failed, with what ``prepare`` decided (the
    parameters used, who triggered, the scope, the overrides) when it got that far."""
    return load_mod.record_failure({**audit, **run_columns(run), "error": error[:2000]})


def run_columns(run: Run) -> dict:
    path = staging.run_dir(run.release, run.run_id, create=False) / staging.RUN_PARAMS
    if not path.exists():
        return {}
    staged = json.loads(path.read_text())
    used = {"params": staged["params"], "seed": int(staged["params"].get("seed", 0))} \
        if staged["params"] else {}
    checked = checked_against(run)
    return {**used, **audit_record(staged["run_record"]),
            **({"checked_against": checked} if checked is not None else {})}


def audit_record(run_record: dict) -> dict:
    """The audit row's columns of a run record."""
    return {"triggered_by": run_record.get("triggered_by"), "scope": run_record.get("scope"),
            "overrides": run_record.get("overrides")}


def cleanup(run: Run) -> bool:
    return staging.cleanup(run.release, run.run_id)


@contextmanager
def heartbeat(run: Run, every: float | None = None):
    """While the block runs, mark the run alive in its staging every ``every``
    seconds (``DEID_HEARTBEAT_SECONDS``, default 15): a run whose tasks were
    all killed stops beating, which ``deid.sweep`` reads."""
    every = every or float(os.environ.get("DEID_HEARTBEAT_SECONDS", "15"))
    stop = threading.Event()

    def beat():
        while True:
            staging.beat(run.release, run.run_id)
            if stop.wait(every):
                return

    thread = threading.Thread(target=beat, name="deid-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
