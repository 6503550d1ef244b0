"""Generalization hierarchies of the quasi-identifiers (El Emam et al. 2012, appendix sections
7-10), read from ``anonymizers/data/hhp/hierarchies.yaml`` and the grouping files it names.
Readings chosen and why: docs/methods/hhp.md#claims-groupings."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from anonymizers.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "hhp"
DEFAULT_HIERARCHIES = DATA / "hierarchies.yaml"
NAMED = {"hhp-2012-v1": DEFAULT_HIERARCHIES,
         "hhp-2012-icd10-v1": DATA / "hierarchies_icd10_v1.yaml",
         "hhp-2012-icd10-ccsr-v1": DATA / "hierarchies_icd10_ccsr_v1.yaml"}
#: the diagnosis code system each bundled hierarchy set groups
CODE_SYSTEM = {"hhp-2012-v1": "icd9cm", "hhp-2012-icd10-v1": "icd10cm",
               "hhp-2012-icd10-ccsr-v1": "icd10cm"}
MAX_CODE = {"icd9_ranges": 5, "icd10_prefixes": 7}  # longest code a prefix rule reads
SUPPRESSED = "*"


@dataclass(frozen=True)
class Encoding:
    """Values encoded once: ``code0[i]`` is the level-0 label index of value
    i; ``maps[l][code0]`` its label index at level l, ``labels[l]`` the label
    strings.  ``fallback``: values (and distinct codes) that fell in no group."""

    code0: np.ndarray
    maps: list[np.ndarray]
    labels: list[np.ndarray]
    fallback: dict = field(default_factory=dict)


@dataclass(frozen=True)
class QIHierarchy:
    name: str
    scope: str
    levels: tuple[dict, ...]
    numeric: bool
    source: str

    @property
    def level_names(self) -> tuple[str, ...]:
        return tuple(lv["name"] for lv in self.levels)

    def encode(self, values: np.ndarray) -> Encoding:
        return (_encode_numeric if self.numeric else _encode_categorical)(self, values)


def load_hierarchies(path: str | Path | None = None) -> dict[str, QIHierarchy]:
    """Every quasi-identifier's hierarchy, by name (cached per path).

    ``path``: a hierarchy file, or a name of ``NAMED``; None is ``hhp-2012-v1``.
    """
    if path is None or str(path) in NAMED:
        path = NAMED[str(path or "hhp-2012-v1")]
    return dict(_load(str(Path(path))))


def hierarchies_code_system(path: str | Path | None = None) -> str | None:
    """The diagnosis code system a hierarchy set groups: ``CODE_SYSTEM`` for a
    bundled name, else read from its ``dx`` levels' kinds (``icd9_ranges``:
    ICD-9-CM, ``icd10_prefixes``: ICD-10-CM); None without a coded dx level."""
    if path is None or str(path) in NAMED:
        return CODE_SYSTEM[str(path or "hhp-2012-v1")]
    dx = load_hierarchies(path).get("dx")
    kinds = {lv["kind"] for lv in dx.levels} if dx is not None else set()
    systems = {KIND_SYSTEM[k] for k in kinds if k in KIND_SYSTEM}
    return systems.pop() if len(systems) == 1 else None


KIND_SYSTEM = {"icd9_ranges": "icd9cm", "icd10_prefixes": "icd10cm"}


@lru_cache(maxsize=4)
def _load(path: str) -> tuple:
    out = []
    for name, spec in _qis(Path(path)).items():
        levels = tuple(_level(lv, Path(path).parent, f"{path}: {name}")
                       for lv in spec["levels"])
        if levels[-1]["kind"] != "suppressed" or any(lv["kind"] == "suppressed"
                                                     for lv in levels[:-1]):
            raise InputError(path, f"{name}: the last level, and only it, is suppressed")
        numeric = levels[0]["kind"] == "exact"
        _check_nesting(name, levels, path)
        out.append((name, QIHierarchy(name, spec.get("scope", "claim"), levels, numeric, path)))
    return tuple(out)


def _qis(path: Path, seen: tuple = ()) -> dict:
    """The ``qis`` of a hierarchy file, those of the file it ``extends`` first."""
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise InputError(str(path), "hierarchy file not found") from None
    qis = {}
    if doc.get("extends"):
        base = path.parent / doc["extends"]
        if base in seen + (path,):
            raise InputError(str(path), f"extends {doc['extends']} in a cycle")
        qis.update(_qis(base, seen + (path,)))
    qis.update(doc.get("qis") or {})
    return qis


def _level(lv: dict, folder: Path, where: str) -> dict:
    if lv.get("suppressed"):
        return {"name": lv["name"], "kind": "suppressed"}
    if lv.get("exact"):
        return {"name": lv["name"], "kind": "exact"}
    if "bins" in lv:
        bins = [(int(lo), None if hi is None else int(hi), str(lab)) for lo, hi, lab in lv["bins"]]
        for (_, hi, _), (lo2, _, _) in itertools.pairwise(bins):
            if hi != lo2:
                raise InputError(where, f"level {lv['name']}: bins must be contiguous")
        return {"name": lv["name"], "kind": "bins", "bins": bins}
    if "values" in lv:
        return {"name": lv["name"], "kind": "values", "values": [str(v) for v in lv["values"]]}
    table = pd.read_csv(folder / lv["file"], dtype=str, keep_default_na=False)
    out = {"name": lv["name"], "kind": lv["kind"], "fallback": str(lv["fallback"]),
           "missing": str(lv["missing"]), "column": lv.get("column", "group")}
    out["rules"] = _RULE_READERS[lv["kind"]](table, out["column"], where)
    return out


def _icd9_rules(table: pd.DataFrame, column: str, where: str) -> dict:
    """prefix -> (width, label): every prefix of every range, the narrowest kept."""
    best: dict[str, tuple[int, str]] = {}
    for label, first, last in zip(table[column], table["first"], table["last"]):
        head = first[:1] if first[:1].isalpha() else ""
        a, b = first[len(head):], last[len(head):]
        if len(first) != len(last) or last[:len(head)] != head or (a and int(a) > int(b)):
            raise InputError(where, f"bad range {first}-{last}")
        prefixes = [head] if not a else [f"{head}{i:0{len(a)}d}" for i in range(int(a), int(b) + 1)]
        width = len(prefixes)
        for p in prefixes:
            old = best.get(p)
            if old is not None and old[0] == width and old[1] != label:
                raise InputError(where, f"prefix {p} is in {old[1]} and {label} with equal "
                                 "specificity: the grouping is ambiguous")
            if old is None or width < old[0]:
                best[p] = (width, label)
    return best


def _icd10_rules(table: pd.DataFrame, column: str, where: str) -> dict:
    """prefix -> (1, label), the shape of ``_icd9_rules``; a prefix twice is
    a file error."""
    best: dict[str, tuple[int, str]] = {}
    for label, prefix in zip(table[column], table["prefix"]):
        p = prefix.strip().replace(".", "").upper()
        if not p or len(p) > MAX_CODE["icd10_prefixes"] or p in best:
            raise InputError(where, f"bad or repeated prefix {prefix!r}")
        best[p] = (1, label)
    return best


def _numeric_rules(table: pd.DataFrame, column: str, where: str) -> list:
    rules = sorted((int(f), int(t), lab) for f, t, lab in zip(table["first"], table["last"],
                                                             table[column]))
    for (f1, t1, _), (f2, _, _) in itertools.pairwise(rules):
        if f2 <= t1:
            raise InputError(where, f"ranges {f1}-{t1} and {f2}-... overlap")
    return rules


def _table_rules(table: pd.DataFrame, column: str, where: str) -> dict:
    key_col = table.columns[0]
    out: dict[str, str] = {}
    for key, label in zip(table[key_col], table[column]):
        k = table_key(key)
        if out.get(k, label) != label:
            raise InputError(where, f"key {key!r} is in two groups")
        out[k] = label
    return out


_RULE_READERS = {"icd9_ranges": _icd9_rules, "icd10_prefixes": _icd10_rules,
                 "numeric_ranges": _numeric_rules,
                 "code_table": _table_rules}


def table_key(value: str) -> str:
    k = str(value).strip().upper()
    return k.zfill(2) if len(k) == 1 and k.isdigit() else k


def group_of(level: dict, code: str) -> str:
    """The label of one normalized code at a categorical level."""
    if code == "":
        return level["missing"]
    found = _lookup(level, code)
    return level["fallback"] if found is None else found


def _lookup(level: dict, code: str) -> str | None:
    """The group a rule of the file gives ``code``, or None."""
    rules = level["rules"]
    if level["kind"] in MAX_CODE:
        for n in range(min(len(code), MAX_CODE[level["kind"]]), 0, -1):
            hit = rules.get(code[:n])
            if hit is not None:
                return hit[1]
        return None
    if level["kind"] == "numeric_ranges":
        if len(code) == 5 and code.isdigit():
            v = int(code)
            for first, last, label in rules:
                if first <= v <= last:
                    return label
        return None
    return rules.get(table_key(code))


def level_labels(level: dict) -> list[str]:
    """Every label a level can give (sorted), for encodings and checks."""
    kind = level["kind"]
    if kind == "suppressed":
        return [SUPPRESSED]
    if kind == "values":
        return sorted(level["values"])
    if kind == "bins":
        return [lab for _, _, lab in level["bins"]]
    rules = level["rules"]
    groups = ([lab for _, lab in rules.values()] if kind in MAX_CODE else
              [lab for *_, lab in rules] if kind == "numeric_ranges" else list(rules.values()))
    return sorted(set(groups) | {level["fallback"], level["missing"]})


def _encode_categorical(h: QIHierarchy, values: np.ndarray) -> Encoding:
    idx, uniques = pd.factorize(pd.Series(values, dtype=object))
    first = h.levels[0]
    if first["kind"] == "values":
        bad = [u for u in uniques if u not in first["values"]]
        if bad:
            raise InputError(h.name, f"values {bad[:5]} are not among {first['values']}")
        raw_groups = list(uniques)
    else:
        raw_groups = [group_of(first, u) for u in uniques]
    labels0 = np.array(level_labels(first), dtype=object)
    pos = {lab: i for i, lab in enumerate(labels0)}
    code0 = np.array([pos[g] for g in raw_groups], dtype=np.int32)[idx] if len(idx) else \
        np.zeros(0, dtype=np.int32)
    maps, labels = [np.arange(len(labels0), dtype=np.int32)], [labels0]
    for lv in h.levels[1:]:
        up = np.array(level_labels(lv), dtype=object)
        upos = {lab: i for i, lab in enumerate(up)}
        maps.append(np.array([upos[_lift(first, lv, lab)] for lab in labels0], dtype=np.int32))
        labels.append(up)
    fallback = {}
    if "fallback" in first:
        fb = np.array([u != "" and _lookup(first, u) is None for u in uniques], dtype=bool)
        fallback = {"values": int(fb[idx].sum()) if len(idx) else 0,
                    "distinct_codes": int(fb.sum()),
                    "missing_values": int((np.asarray(values, dtype=object) == "").sum())}
    return Encoding(code0, maps, labels, fallback)


def _lift(first: dict, upper: dict, label: str) -> str:
    """The label at ``upper`` of a level-0 label (levels are nested)."""
    if upper["kind"] == "suppressed":
        return SUPPRESSED
    if label in (first.get("fallback"), first.get("missing")):
        return upper["fallback"] if label == first.get("fallback") else upper["missing"]
    return first["lift"][upper["name"]][label]


def _check_nesting(name: str, levels: tuple, path: str) -> None:
    first = levels[0]
    if first["kind"] in (*MAX_CODE, "numeric_ranges", "code_table"):
        first["lift"] = {}
        for up in levels[1:]:
            if up["kind"] == "suppressed":
                continue
            if up["kind"] != first["kind"]:
                raise InputError(path, f"{name}: levels must group with the same rules")
            pairs = _paired_labels(first, up)
            lift: dict[str, str] = {}
            for lo_lab, up_lab in pairs:
                if lift.setdefault(lo_lab, up_lab) != up_lab:
                    raise InputError(path, f"{name}: {lo_lab} lies in two groups of {up['name']}")
            first["lift"][up["name"]] = lift
    for lo, up in itertools.pairwise(levels):
        if lo["kind"] == "bins" and up["kind"] == "bins":
            edges = {b[0] for b in up["bins"]}
            if not {b[0] for b in lo["bins"]} >= edges:
                raise InputError(path, f"{name}: bins of {up['name']} do not nest those of "
                                 f"{lo['name']}")


def _paired_labels(first: dict, up: dict) -> list[tuple[str, str]]:
    if first["kind"] in MAX_CODE:
        return [(first["rules"][p][1], up["rules"][p][1]) for p in first["rules"]]
    if first["kind"] == "numeric_ranges":
        upper = {(f, t): lab for f, t, lab in up["rules"]}
        return [(lab, upper[(f, t)]) for f, t, lab in first["rules"]]
    return [(first["rules"][k], up["rules"][k]) for k in first["rules"]]


def _encode_numeric(h: QIHierarchy, values: np.ndarray) -> Encoding:
    values = np.asarray(values, dtype=np.int64)
    uniq, code0 = np.unique(values, return_inverse=True)
    maps, labels = [np.arange(len(uniq), dtype=np.int32)], [uniq.astype(str).astype(object)]
    for lv in h.levels[1:]:
        if lv["kind"] == "suppressed":
            maps.append(np.zeros(len(uniq), dtype=np.int32))
            labels.append(np.array([SUPPRESSED], dtype=object))
            continue
        lows = np.array([b[0] for b in lv["bins"]], dtype=np.int64)
        top = lv["bins"][-1][1]
        at = np.searchsorted(lows, uniq, side="right") - 1
        outside = (at < 0) | ((uniq >= top) if top is not None else np.zeros(len(uniq), bool))
        if outside.any():
            raise InputError(h.name, f"value {int(uniq[outside][0])} falls in no bin of "
                             f"level {lv['name']!r}")
        maps.append(at.astype(np.int32))
        labels.append(np.array([b[2] for b in lv["bins"]], dtype=object))
    return Encoding(code0.astype(np.int32).ravel(), maps, labels, {})
