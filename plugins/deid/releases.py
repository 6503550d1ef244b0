"""Release configurations: ``releases/<name>.yaml``, one scheduled DAG each.

A file names the source scope, the code system of its claims (``code_system``:
``icd9cm``, the default, or ``icd10cm``) and what the extract does with codes
of the other system (``mixed``: ``refuse``, the default, or ``map-to-icd10``
through CMS's GEM named by ``gem``) and with unknown codes (``drop_unknown``);
``gem`` also carries an ICD-9-CM level utility policy into ICD-10-CM claims,
the screening policy, the method and its parameters, validation thresholds,
what a trigger may change, the schedule and the destination table.  It is the approved policy of the release: a run
uses its method and at least its protection (``deid.overrides``).

``load_release`` checks one file and raises ``ReleaseConfigError`` naming
the file and the field.  Each file is read and checked on its own
(``load_all_with_errors``): a bad file loses its own DAG and no other, and
a task reads only its own file (``load_for_dag``).  Airflow records import
errors per Python file, and an import error on ``dags/releases.py`` marks
every DAG of that file as broken (``airflow.dag_processing.collection``),
so a bad release file is not raised as one: its error is logged by the DAG
processor and listed, with file and field, by ``load_all_with_errors`` for
the Releases view.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from anonymizers.codesystems import FORWARD_GEM
from anonymizers.errors import InputError
from anonymizers.policies import named_level
from deid.methods import (
    FILE_ONLY,
    METHODS,
    METRICS,
    PERCENT_METRICS,
    RATIO_METRICS,
    SHARE_METRICS,
    STRONGER,
    check_params,
    param_schemas,
)
from deid.paths import ROOT
from deid.scope import checked as checked_scope

NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
PRESETS = {"@once", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", None}
# the bundled screening policies (anonymizers.claims.screening.NAMED_POLICIES: ICD-9-CM and
# ICD-10-CM lists), named here without importing it so that parsing a DAG stays light
SCREENING_POLICIES = [None, "none", "hhp-2012-v1", "hhp-2012-icd10-v1"]
#: the code system each bundled screening policy's lists are written in
POLICY_CODE_SYSTEM = {"hhp-2012-v1": "icd9cm", "hhp-2012-icd10-v1": "icd10cm"}
CODE_SYSTEMS = ("icd9cm", "icd10cm")  # anonymizers.codesystems.CODE_SYSTEMS, kept light
MIXED = ("refuse", "map-to-icd10")
FIELDS = {"name", "version", "description", "schedule", "scope", "code_system", "mixed",
          "drop_unknown", "gem", "screening_policy", "method", "params", "thresholds",
          "overrides", "destination"}
#: what a release file may say a trigger may do with a parameter (deid.overrides)
OVERRIDE_RULES = ("stronger", "any", "fixed")
DAG_PREFIX = "deid_"
# the sweep's DAG is deid_maintenance: no release may take that DAG id
MAINTENANCE = "maintenance"


class ReleaseConfigError(ValueError):
    def __init__(self, path: Path, field: str, problem: str):
        super().__init__(f"{path.name}: field {field!r}: {problem}")
        self.path, self.field, self.problem = path, field, problem


@dataclass(frozen=True)
class CodePolicy:
    """What the extract does with the claims' diagnosis codes (``deid.extract``):
    check them against ``code_system``; a code flagged (CMS's ``*_VRSN_CD``) in
    the other system is refused or, with ``mixed = "map-to-icd10"``, mapped
    through the GEM at ``gem``; an unknown code stops the run unless
    ``drop_unknown``, which counts and drops it.  A code is first checked
    against the system its own flag names: a row flagged 9 whose code is no
    ICD-9-CM code (nor of ICD-9-CM's form) is an unknown code, not a code of
    the other system, so ``drop_unknown`` drops and counts it even under
    ``mixed: refuse``; only valid codes of the other system meet ``mixed``."""

    code_system: str = "icd9cm"
    mixed: str = "refuse"
    drop_unknown: bool = False
    gem: str | None = None

    def as_dict(self) -> dict:
        return {"code_system": self.code_system, "mixed": self.mixed,
                "drop_unknown": self.drop_unknown, "gem": self.gem}

    def versions(self) -> dict:
        """For the audit's ``policy_versions``: the sha256 of the GEM file (a
        path does not say whether the mapping under it changed); none without.
        A GEM that cannot be read is bad input (the run fails at once)."""
        if self.gem is None:
            return {}
        try:
            return {"gem_sha256": hashlib.sha256(Path(self.gem).read_bytes()).hexdigest()}
        except OSError as exc:
            raise InputError(self.gem, f"the GEM cannot be read ({exc.strerror or exc})") \
                from None


@dataclass(frozen=True)
class Release:
    name: str
    version: int
    description: str
    schedule: str | None
    scope: str
    screening_policy: str | None
    method: str
    params: dict  # every parameter of the method: the file's, else its default
    thresholds: dict = field(default_factory=dict)
    destination: str = ""
    path: Path | None = None
    overrides: dict = field(default_factory=dict)  # parameter -> OVERRIDE_RULES, as written
    codes: CodePolicy = field(default_factory=CodePolicy)

    @property
    def dag_id(self) -> str:
        return f"{DAG_PREFIX}{self.name}"


def load_release(path: Path) -> Release:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ReleaseConfigError(path, "(file)", f"not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ReleaseConfigError(path, "(file)", "must be a mapping of fields")
    _check_fields(path, raw)
    method = raw["method"]
    file_params = _mapping(path, raw, "params")
    misplaced = sorted(FILE_ONLY & set(file_params))
    if misplaced:
        raise ReleaseConfigError(path, f"params.{misplaced[0]}", "a top-level field of the "
                                 f"release file ({misplaced[0]}: ...), not a method parameter")
    codes = _code_policy(path, raw)
    file_params = {**file_params, "code_system": codes.code_system, "gem": codes.gem}
    try:
        check_params(method, file_params)
    except ValueError as exc:
        field_name, _, problem = str(exc).partition(": ")
        raise ReleaseConfigError(path, f"params.{field_name}", problem) from None
    dest = (_mapping(path, raw, "destination")).get("table", raw["name"])
    if not NAME.match(str(dest)):
        raise ReleaseConfigError(path, "destination.table", f"must match {NAME.pattern}")
    defaults = {name: schema["default"] for name, schema in param_schemas(method).items()}
    return Release(name=raw["name"], version=_version(path, raw.get("version", 1)),
                   description=str(raw.get("description", "")).strip(),
                   schedule=raw.get("schedule"), scope=str(raw.get("scope", "TRUE")),
                   screening_policy=raw.get("screening_policy") if raw.get("screening_policy")
                   != "none" else None, method=method, params={**defaults, **file_params},
                   thresholds=_thresholds(path, method, _mapping(path, raw, "thresholds")),
                   destination=dest, path=path,
                   overrides=_overrides(path, method, _mapping(path, raw, "overrides")),
                   codes=codes)


def _code_policy(path: Path, raw: dict) -> CodePolicy:
    """The code system fields, checked together (and against the screening policy)."""
    system = raw.get("code_system", "icd9cm")
    if system not in CODE_SYSTEMS:
        raise ReleaseConfigError(path, "code_system", f"{system!r}: must be one of "
                                 f"{list(CODE_SYSTEMS)}")
    mixed = raw.get("mixed", "refuse")
    if mixed not in MIXED:
        raise ReleaseConfigError(path, "mixed", f"{mixed!r}: must be one of {list(MIXED)}")
    drop = raw.get("drop_unknown", False)
    if not isinstance(drop, bool):
        raise ReleaseConfigError(path, "drop_unknown", f"must be true or false, not {drop!r}")
    policy = raw.get("screening_policy")
    if POLICY_CODE_SYSTEM.get(policy, system) != system:
        raise ReleaseConfigError(path, "screening_policy", f"{policy} lists "
                                 f"{POLICY_CODE_SYSTEM[policy]} codes; the claims are "
                                 f"{system} (code_system): name the policy of their system")
    gem = raw.get("gem")
    if mixed == "map-to-icd10" and system != "icd10cm":
        raise ReleaseConfigError(path, "mixed", "map-to-icd10 maps ICD-9-CM codes into "
                                 "ICD-10-CM: it needs code_system: icd10cm")
    carried = _carried_policy(raw) if system == "icd10cm" else None
    needs = ("mixed: map-to-icd10" if mixed == "map-to-icd10" else
             f"utility_policy: {carried}" if carried else None)
    if needs:
        if not isinstance(gem, str) or not gem.strip():
            other = (f", or name the claims' own level ({carried.replace('icd9', 'icd10')})"
                     if carried and mixed != "map-to-icd10" else "")
            raise ReleaseConfigError(path, "gem", f"{needs} needs the path of CMS's ICD-9 -> "
                                     f"ICD-10-CM GEM (CSV; the project ships {FORWARD_GEM})"
                                     f"{other}")
        gem = str(ROOT / gem) if not Path(gem).is_absolute() else gem
        if not Path(gem).is_file():
            raise ReleaseConfigError(path, "gem", f"no such file: {gem}")
    elif gem is not None:
        raise ReleaseConfigError(path, "gem", "read only with mixed: map-to-icd10 or an "
                                 "ICD-9-CM level utility policy (icd9-level-N) on ICD-10-CM "
                                 "claims")
    return CodePolicy(system, mixed, drop, gem)


def _carried_policy(raw: dict) -> str | None:
    """The ICD-9-CM level (``icd9-level-N``) the file's method parameters name as
    utility policy, which ICD-10-CM claims meet carried through the GEM
    (anonymizers/level_policies.py); else None."""
    params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
    default = param_schemas(raw["method"]).get("utility_policy", {}).get("default") \
        if raw.get("method") in METHODS else None
    name = params.get("utility_policy", default)  # the method's default when not written
    named = named_level(name) if isinstance(name, str) else None
    return name if named and named[0] == "icd9cm" else None


def _check_fields(path: Path, raw: dict) -> None:
    unknown = set(raw) - FIELDS
    if unknown:
        raise ReleaseConfigError(path, sorted(unknown)[0], f"unknown field; known: {sorted(FIELDS)}")
    for required in ("name", "method"):
        if required not in raw:
            raise ReleaseConfigError(path, required, "missing")
    if not NAME.match(str(raw["name"])):
        raise ReleaseConfigError(path, "name", f"must match {NAME.pattern}")
    if raw["name"] == MAINTENANCE:
        raise ReleaseConfigError(path, "name", f"{MAINTENANCE!r} is reserved for the "
                                 f"{DAG_PREFIX}{MAINTENANCE} DAG")
    if raw["name"] != path.stem:
        raise ReleaseConfigError(path, "name", f"{raw['name']!r} must be the file's name "
                                 f"without .yaml ({path.stem!r}): a task reads only its file")
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


def _mapping(path: Path, raw: dict, name: str) -> dict:
    value = raw.get(name) or {}
    if not isinstance(value, dict):
        raise ReleaseConfigError(path, name, f"must be a mapping, not {value!r}")
    return value


def _version(path: Path, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ReleaseConfigError(path, "version", f"must be a whole number from 1, not {value!r}")
    return value


def _thresholds(path: Path, method: str, thresholds: dict) -> dict:
    """``max_<metric>`` / ``min_<metric>``: a number, over a metric the method measures."""
    known = METRICS[method]
    for name, limit in thresholds.items():
        bound, _, metric = str(name).partition("_")
        if bound not in ("max", "min") or metric not in known:
            raise ReleaseConfigError(path, f"thresholds.{name}", f"not max_<metric> or "
                                     f"min_<metric> over a metric of {method}; its metrics: "
                                     f"{', '.join(known)}")
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            raise ReleaseConfigError(path, f"thresholds.{name}", f"must be a number, not "
                                     f"{limit!r}")
        problem = _out_of_range(metric, limit)
        if problem:
            raise ReleaseConfigError(path, f"thresholds.{name}", problem)
    return dict(thresholds)


def _out_of_range(metric: str, limit: float) -> str | None:
    """Why ``limit`` can never bind on ``metric``'s scale, or None."""
    if metric in SHARE_METRICS and not 0 <= limit <= 1:
        return f"{metric} is a share from 0 to 1 (write 0.9 for 90 %), not {limit}"
    if metric in PERCENT_METRICS and not (limit == 0 or 1 <= limit <= 100):
        return (f"{metric} is in percent, 0 to 100 (write 30 for 30 %): {limit} is "
                "outside it or reads as a share")
    if metric in RATIO_METRICS and limit < 1:
        return f"{metric} is a ratio of at least 1: {limit} can never pass"
    if limit < 0:
        return f"{metric} is never negative: {limit} cannot bind"
    return None


def _overrides(path: Path, method: str, overrides: dict) -> dict:
    """What a trigger may do with each named parameter (or ``scope``)."""
    names = set(param_schemas(method)) | {"scope"}
    for name, rule in overrides.items():
        where = f"overrides.{name}"
        if name in FILE_ONLY:
            raise ReleaseConfigError(path, where, "set by the release file alone: no trigger "
                                     "may change it")
        if name not in names:
            raise ReleaseConfigError(path, where, f"not a parameter of {method} nor scope; "
                                     f"known: {sorted(names)}")
        if rule not in OVERRIDE_RULES:
            raise ReleaseConfigError(path, where, f"{rule!r}: must be one of {OVERRIDE_RULES}")
        if rule == "stronger" and name not in STRONGER:
            raise ReleaseConfigError(path, where, "has no stronger direction "
                                     "(deid.methods.STRONGER): say any or fixed")
    return dict(overrides)


def _check_schedule(path: Path, schedule) -> None:
    if schedule in PRESETS:
        return
    from croniter import croniter

    if not isinstance(schedule, str) or not croniter.is_valid(schedule):
        raise ReleaseConfigError(path, "schedule", f"not a cron expression or preset: {schedule!r}")


def releases_dir() -> Path:
    """``releases/`` of the project, or ``DEID_RELEASES_DIR``."""
    return Path(os.environ.get("DEID_RELEASES_DIR", ROOT / "releases"))


ConfigProblem = tuple[Path, str, str]  # (file, field, problem)


def load_all_with_errors(folder: Path | None = None) -> tuple[list[Release], list[ConfigProblem]]:
    """The good releases, and (file, field, problem) for every file refused.

    Each file is checked on its own; then two files with the same
    destination table are both refused, each naming the other."""
    folder = folder or releases_dir()
    releases, errors = [], []
    for path in sorted(folder.glob("*.yaml")):
        try:
            releases.append(load_release(path))
        except ReleaseConfigError as exc:
            errors.append((path, exc.field, exc.problem))
    by_table = defaultdict(list)
    for release in releases:
        by_table[release.destination].append(release)
    for table, group in by_table.items():
        for release in group if len(group) > 1 else ():
            others = ", ".join(r.path.name for r in group if r is not release)
            errors.append((release.path, "destination.table",
                           f"release.{table} is also the destination of {others}"))
    refused = {path for path, _, _ in errors}
    return [r for r in releases if r.path not in refused], sorted(errors)


def load_all(folder: Path | None = None) -> list[Release]:
    """Every release, or ``ReleaseConfigError`` for the first file refused."""
    releases, errors = load_all_with_errors(folder)
    if errors:
        raise ReleaseConfigError(*errors[0])
    return releases


def load_for_dag(dag_id: str, folder: Path | None = None) -> list[Release]:
    """The release of ``dag_id`` read from its own file alone (a task's parse):
    ``deid_<name>`` is ``<name>.yaml``; none for another DAG id."""
    name = dag_id.removeprefix(DAG_PREFIX)
    path = (folder or releases_dir()) / f"{name}.yaml"
    if not dag_id.startswith(DAG_PREFIX) or not NAME.match(name) or not path.is_file():
        return []
    return [load_release(path)]
