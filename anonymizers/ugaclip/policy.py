"""Utility policies (Loukides et al., PNAS 2010, SI "Utility Policies"): disjoint utility
constraints, the bundled Tables S1-S2 policies, checked against or GEM-mapped to the data's codes.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-policy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from anonymizers.codesystems import (
    ICD9CM,
    ICD10CM,
    NAMES,
    check_system,
    is_valid,
    normalize,
)
from anonymizers.errors import InputError, ParameterError
from anonymizers.io import read_json

DATA = Path(__file__).resolve().parents[1] / "data" / "utility_policies"
BUNDLED_SYSTEM = ICD9CM  # Table S2 prints ICD-9-CM codes


@dataclass(frozen=True)
class UtilityPolicy:
    """Disjoint utility constraints (tuples of sorted codes) and their names."""

    constraints: tuple[tuple[str, ...], ...]
    names: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @classmethod
    def from_lists(cls, constraints, names=None, source: str = "utility policy") -> UtilityPolicy:
        """Validate and build: non-empty constraints of code strings, pairwise disjoint."""
        cons, owner = [], {}
        names = list(names) if names is not None else [f"u{i + 1}" for i in range(len(constraints))]
        if len(names) != len(constraints):
            raise InputError(source, "names and constraints differ in length")
        for n, (name, c) in enumerate(zip(names, constraints), start=1):
            if isinstance(c, str) or not c or not all(isinstance(x, str) and x for x in c):
                raise InputError(source, f"constraint {n} ({name}) must be a non-empty list of "
                                 f"code strings, got {c!r}")
            for code in set(c):
                if code in owner:
                    raise InputError(source, f"code {code!r} is in both {owner[code]!r} and "
                                     f"{name!r}: utility constraints must be disjoint")
                owner[code] = name
            cons.append(tuple(sorted(set(c))))
        return cls(tuple(cons), tuple(str(x) for x in names))

    def strip_dots(self) -> UtilityPolicy:
        """The same policy with dots removed from codes ('493.00' -> '49300')."""
        policy = UtilityPolicy.from_lists([[c.replace(".", "") for c in u]
                                           for u in self.constraints], self.names)
        return UtilityPolicy(policy.constraints, policy.names, self.notes)

    def mapped(self, mapping, target: str = ICD10CM) -> UtilityPolicy:
        """The policy with every code carried through ``mapping`` (a
        ``codesystems.Mapping``) into ``target``'s codes, undotted.  Codes
        the map cannot carry are left out, and a target reached from a second
        constraint stays in the first; both are listed in ``notes``.  A
        constraint left with no code is dropped (and noted)."""
        check_system(target)
        owner: dict[str, str] = {}
        cons, names, notes = [], [], list(self.notes)
        for name, codes in zip(self.names, self.constraints):
            targets, lost = [], []
            for code in codes:
                got = mapping.codes.get(str(normalize([code])[0]))
                if got is None:
                    lost.append(code)
                elif owner.setdefault(got, name) != name:
                    notes.append(f"{name}: {code} -> {got}, already in {owner[got]}; "
                                 f"kept there")
                else:
                    targets.append(got)
            if lost:
                notes.append(f"{name}: not carried into {NAMES[target]}: {', '.join(lost)}")
            if targets:
                cons.append(targets)
                names.append(name)
            else:
                notes.append(f"{name}: no code carried into {NAMES[target]}; left out")
        policy = UtilityPolicy.from_lists(cons, names, f"utility policy in {NAMES[target]}")
        return UtilityPolicy(policy.constraints, policy.names, tuple(notes))

    def check_codes(self, code_system: str, source: str = "utility policy") -> UtilityPolicy:
        """This policy, if every code is, normalised, a code of
        ``code_system``; InputError naming the first constraint that holds
        another (not the code: it may be read beside patient data)."""
        for n, (name, codes) in enumerate(zip(self.names, self.constraints), start=1):
            if not is_valid(list(codes), code_system).all():
                raise InputError(source, f"constraint {n} ({name}) holds a code that is not "
                                 f"a code of {NAMES[code_system]}")
        return self


def bundled() -> list[str]:
    """Names accepted by ``load_utility_policy`` besides file paths."""
    out = []
    for path in sorted(DATA.glob("*.json")):
        obj = json.loads(path.read_text())
        out.append(path.stem)
        out += [f"{path.stem}-k{k}" for k in obj.get("k_values", [])]
    return out


def load_utility_policy(name_or_path: str, strip_dots: bool = False,
                        code_system: str | None = None, mapping=None) -> UtilityPolicy:
    """A bundled policy by name (see ``bundled()``) or a JSON file.

    A file holds either a list of code lists, or an object whose
    ``constraints`` is a list of code lists or of ``{"name", "codes"}``.
    ``code_system`` (None: no check, as before code systems were named)
    checks a file's codes against that system, or carries a bundled ICD-9-CM
    policy into ICD-10-CM through ``mapping`` (see
    docs/methods/ugaclip.md#ugaclip-policy).
    """
    policy = _bundled(name_or_path)
    if policy is not None and code_system is not None and \
            check_system(code_system) != BUNDLED_SYSTEM:
        if mapping is None:
            raise ParameterError("utility_policy", f"{name_or_path!r} is tabulated in "
                                 f"{NAMES[BUNDLED_SYSTEM]}; for {NAMES[code_system]} data give "
                                 "a mapping (codesystems.gem_forward) or a policy file")
        return policy.mapped(mapping, code_system)
    if policy is None:
        path = Path(name_or_path)
        if not path.is_file():
            raise ParameterError("utility_policy", f"{name_or_path!r} is neither a file nor a "
                                 f"bundled policy ({', '.join(bundled())})")
        obj = read_json(path)
        policy = from_json(obj, str(path))
        if code_system is not None:
            policy.check_codes(check_system(code_system), str(path))
    return policy.strip_dots() if strip_dots else policy


def from_json(obj, source: str, k: int | None = None) -> UtilityPolicy:
    """Parse the JSON forms described in ``load_utility_policy``."""
    items = obj.get("constraints") if isinstance(obj, dict) else obj
    if not isinstance(items, list):
        raise InputError(source, 'expected a list of code lists or {"constraints": [...]}')
    names, cons = [], []
    for n, item in enumerate(items, start=1):
        if isinstance(item, dict):
            if k is not None and k not in item.get("k", []):
                continue
            names.append(str(item.get("name", f"u{n}")))
            cons.append(item.get("codes"))
        else:
            names.append(f"u{n}")
            cons.append(item)
    return UtilityPolicy.from_lists(cons, names, source)


def _bundled(name: str) -> UtilityPolicy | None:
    stem, _, k = name.partition("-k")
    path = DATA / f"{stem}.json"
    if "/" in name or not path.is_file():
        return None
    obj = json.loads(path.read_text())
    if not k:
        return from_json(obj, str(path))
    if not k.isdigit() or int(k) not in obj.get("k_values", []):
        raise ParameterError("utility_policy", f"{name!r}: {stem} is tabulated for k in "
                             f"{obj.get('k_values', [])} only")
    return from_json(obj, str(path), k=int(k))
