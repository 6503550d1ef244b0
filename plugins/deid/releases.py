"""Release configurations: ``releases/<name>.yaml``, one scheduled DAG each.

A file names the source scope, the screening policy, the method and its
parameters, validation thresholds, the schedule and the destination table.
``load_release`` checks every field and raises ``ReleaseConfigError`` naming
the file and the field, so that a bad file fails DAG parsing (and the DagBag
test) instead of a run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from anonymizers.errors import InputError
from deid.methods import COMMON_PARAMS, METHODS, check_params
from deid.paths import ROOT
from deid.scope import checked as checked_scope

NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", None}
SCREENING_POLICIES = [None, "none", "hhp-2012-v1"]  # anonymizers/data/hhp/screening_policy_v1.yaml
FIELDS = {"name", "version", "description", "schedule", "scope", "screening_policy",
          "method", "params", "thresholds", "destination"}


class ReleaseConfigError(ValueError):
    def __init__(self, path: Path, field: str, problem: str):
        super().__init__(f"{path.name}: field {field!r}: {problem}")
        self.path, self.field = path, field


@dataclass(frozen=True)
class Release:
    name: str
    version: int
    description: str
    schedule: str | None
    scope: str
    screening_policy: str | None
    method: str
    params: dict
    thresholds: dict = field(default_factory=dict)
    destination: str = ""
    path: Path | None = None

    @property
    def dag_id(self) -> str:
        return f"deid_{self.name}"


def load_release(path: Path) -> Release:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ReleaseConfigError(path, "(file)", f"not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ReleaseConfigError(path, "(file)", "must be a mapping of fields")
    _check_fields(path, raw)
    method = raw["method"]
    params = {**{k: v["default"] for k, v in COMMON_PARAMS.items()}, **(raw.get("params") or {})}
    try:
        check_params(method, params)
    except ValueError as exc:
        field_name, _, problem = str(exc).partition(": ")
        raise ReleaseConfigError(path, f"params.{field_name}", problem) from None
    dest = (raw.get("destination") or {}).get("table", raw["name"])
    if not NAME.match(str(dest)):
        raise ReleaseConfigError(path, "destination.table", f"must match {NAME.pattern}")
    return Release(name=raw["name"], version=int(raw.get("version", 1)),
                   description=str(raw.get("description", "")).strip(),
                   schedule=raw.get("schedule"), scope=str(raw.get("scope", "TRUE")),
                   screening_policy=raw.get("screening_policy") if raw.get("screening_policy")
                   != "none" else None, method=method, params=params,
                   thresholds=dict(raw.get("thresholds") or {}), destination=dest, path=path)


def _check_fields(path: Path, raw: dict) -> None:
    unknown = set(raw) - FIELDS
    if unknown:
        raise ReleaseConfigError(path, sorted(unknown)[0], f"unknown field; known: {sorted(FIELDS)}")
    for required in ("name", "method"):
        if required not in raw:
            raise ReleaseConfigError(path, required, "missing")
    if not NAME.match(str(raw["name"])):
        raise ReleaseConfigError(path, "name", f"must match {NAME.pattern}")
    if raw["method"] not in METHODS:
        raise ReleaseConfigError(path, "method", f"unknown method {raw['method']!r}; "
                                 f"available: {sorted(METHODS)}")
    _check_schedule(path, raw.get("schedule"))
    try:
        checked_scope(str(raw.get("scope", "TRUE")))
    except InputError as exc:
        raise ReleaseConfigError(path, "scope", exc.problem) from None
    if raw.get("screening_policy") not in SCREENING_POLICIES:
        raise ReleaseConfigError(path, "screening_policy", f"unknown policy "
                                 f"{raw.get('screening_policy')!r}; known: {SCREENING_POLICIES}")


def _check_schedule(path: Path, schedule) -> None:
    if schedule in PRESETS:
        return
    from croniter import croniter

    if not isinstance(schedule, str) or not croniter.is_valid(schedule):
        raise ReleaseConfigError(path, "schedule", f"not a cron expression or preset: {schedule!r}")


def releases_dir() -> Path:
    """``releases/`` of the project, or ``DEID_RELEASES_DIR``."""
    return Path(os.environ.get("DEID_RELEASES_DIR", ROOT / "releases"))


def load_all(folder: Path | None = None) -> list[Release]:
    folder = folder or releases_dir()
    releases = [load_release(p) for p in sorted(folder.glob("*.yaml"))]
    names = [r.name for r in releases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ReleaseConfigError(folder, "name", f"used by more than one file: {sorted(dup)}")
    return releases
