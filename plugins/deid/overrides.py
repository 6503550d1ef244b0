"""What a trigger may change of a release: the release file is the approved policy.

The file fixes the method and the least protection.  A run's parameters
(Airflow's params: the file's values, then the trigger's conf) are compared
with the file's; each that differs is an override, allowed by the rule the
file gives it under ``overrides:`` or by default:

- ``stronger`` (the default for settings with a direction in
  ``deid.methods.STRONGER``): only that way, e.g. a larger k or m, a smaller
  cap or MaxSup; a SQL filter (``scope``, ``gccens_sample``) may be narrowed,
  ANDed with the file's, never replaced;
- ``any`` (the default for ``deid.methods.FREE``, settings the release does
  not depend on): any valid value;
- ``fixed`` (the default for everything else: seed, utility policy, code
  lists, ...): not at all.  The code system and the GEM (``deid.methods.FILE_ONLY``)
  are fixed whatever the file says: they describe the data, not a protection.

The method is never overridden, nor may a run name a parameter its method
does not have.  A refused run stops before anything is extracted.
"""

from __future__ import annotations

from dataclasses import dataclass

from anonymizers.errors import InputError
from deid.methods import FILE_ONLY, FREE, STRONGER, check_params
from deid.releases import Release
from deid.scope import checked


class OverrideRefused(Exception):
    """The run asks for what its release file does not allow."""

    def __init__(self, release: Release, problems: list[str], requested: dict):
        self.problems, self.requested = problems, requested
        super().__init__(f"{release.path.name} does not allow this run: " + "; ".join(problems))


@dataclass(frozen=True)
class Resolved:
    params: dict     # the method's parameters the run uses
    scope: str       # the scope the run extracts
    overrides: dict  # name -> {"file": value, "run": value} for each allowed change


def rule(release: Release, name: str) -> str:
    if name in FILE_ONLY:
        return "fixed"
    if name in release.overrides:
        return release.overrides[name]
    return "any" if name in FREE else "stronger" if name in STRONGER else "fixed"


def resolve(release: Release, requested: dict) -> Resolved:
    """The run's parameters and scope under the file's policy, or OverrideRefused."""
    params, changed, problems = dict(release.params), {}, []
    scope = release.scope
    for name, value in requested.items():
        if name == "method":
            if value != release.method:
                problems.append(f"method: the release file fixes {release.method!r}; a "
                                f"trigger may not choose {value!r}")
            continue
        file_value = release.scope if name == "scope" else release.params.get(name, KeyError)
        if file_value is KeyError:
            problems.append(f"{name}: not a parameter of {release.method}")
        elif not _same(file_value, value):
            changed[name] = {"file": file_value, "run": value}
            try:
                new = _allowed(release, name, file_value, value)
            except (ValueError, InputError) as exc:
                problems.append(f"{name}: {getattr(exc, 'problem', exc)}")
                changed[name]["refused"] = str(getattr(exc, "problem", exc))
                continue
            if name == "scope":
                scope = new
            else:
                params[name] = new
    if not problems:
        try:
            check_params(release.method, params)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise OverrideRefused(release, problems, changed)
    return Resolved(params, scope, changed)


def _same(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    if isinstance(a, bool) or isinstance(b, bool):  # True == 1 in Python
        return a is b
    return a == b


def _allowed(release: Release, name: str, old, new):
    """The value the run uses for ``name``, or ValueError saying why not."""
    how = rule(release, name)
    if how == "fixed":
        raise ValueError(f"the release file fixes it at {old!r}; a trigger asked for {new!r}")
    way = STRONGER.get(name)
    if way == "narrower":  # a SQL filter: checked alone, then ANDed unless the file allows any
        return checked(new) if how == "any" else f"({checked(old)}) AND ({checked(new)})"
    if how == "any" or _rank(way, new) >= _rank(way, old):
        return new
    raise ValueError(f"{new!r} is weaker than the release file's {old!r} "
                     f"(a trigger may only make it {_describe(way)})")


def _rank(way, value) -> float:
    """Higher is stronger; None (no bound) is the weakest."""
    if isinstance(way, tuple):
        if value not in way:
            raise ValueError(f"{value!r} is not one of {list(way)}")
        return way.index(value)
    if value is None:
        return float("-inf")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return value if way == "larger" else -value


def _describe(way) -> str:
    if isinstance(way, tuple):
        return "stronger: " + " < ".join(map(str, way))
    return way

