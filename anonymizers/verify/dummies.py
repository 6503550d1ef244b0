"""Verifier of MedCo code clusters and dummy patients (Zoveralli, sections 2-3).

Written from the definitions alone, with plain Python sets; it imports
nothing of ``anonymizers.dummies``.  What a correct release satisfies:

- clusters: every input code is in exactly one cluster; with a minimum
  anonymity set ``A``, every cluster holds at least ``A`` codes, unless all
  clusters together hold fewer than ``A`` codes, in which case there must be
  a single cluster (the best possible; the clustering flags it);
- flatness: in the released table, the number of patients holding each code
  of a cluster is the same within 1, for every cluster (3.3);
- the map (private) names every released pseudonym once; its real rows are
  exactly the input patients, once each;
- every real patient is released unchanged (same code set);
- every dummy comes from an input patient and has as many codes (3.1);
- no dummy's code set equals a real patient's or another dummy's.  No
  collision is tolerated: the generator drops what it cannot repair.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from anonymizers.verify.verdict import Verdict

CLUSTERS = "MedCo clusters (partition of the codes, minimum anonymity set)"
DUMMIES = ("MedCo dummies (flat clusters within 1, real patients unchanged, dummy sizes "
           "of their source, no repeated code set)")
TRUE = {"true", "1", "yes"}
FALSE = {"false", "0", "no"}


def verify_clusters(original: pd.DataFrame, clusters, min_anonymity_set: int | None) -> Verdict:
    """Check that ``clusters`` partition the codes of ``original`` with at least
    ``min_anonymity_set`` codes each (see the module docstring)."""
    codes = set(original["code"].astype(str))
    problems = _cluster_problems(codes, clusters, min_anonymity_set)
    return Verdict.from_violations(CLUSTERS, len(clusters) if isinstance(clusters, list) else 0,
                                   problems)


def verify_dummies(original: pd.DataFrame, released: pd.DataFrame, dummy_map: pd.DataFrame,
                   clusters, min_anonymity_set: int | None = None) -> Verdict:
    """Check a release with dummies against its input (see the module docstring)."""
    real_sets = code_sets(original["patient_id"], original["code"])
    shown = code_sets(released["patient_id"], released["code"])
    problems = _cluster_problems(set().union(*real_sets.values()) if real_sets else set(),
                                 clusters, min_anonymity_set)
    problems += _duplicate_rows(released)
    is_dummy, source, map_problems = _read_map(dummy_map)
    problems += map_problems
    if not map_problems:
        problems += _map_covers(shown, is_dummy, source, real_sets)
        problems += _patients(shown, is_dummy, source, real_sets)
    if _well_formed(clusters):
        problems += _flatness(shown, clusters)
    return Verdict.from_violations(DUMMIES, len(shown), problems)


def code_sets(ids: pd.Series, codes: pd.Series) -> dict[str, frozenset]:
    """Patient id (as a string) -> the set of its codes (as strings)."""
    ids = ids.astype(str).to_numpy(dtype=object)
    codes = codes.astype(str).to_numpy(dtype=object)
    order = np.argsort(ids, kind="stable")
    ids, codes = ids[order], codes[order]
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], cuts]).astype(int)
    ends = np.concatenate([cuts, [len(ids)]]).astype(int)
    code_list = codes.tolist()
    return {ids[a]: frozenset(code_list[a:b]) for a, b in zip(starts, ends) if b > a}


def _well_formed(clusters) -> bool:
    return (isinstance(clusters, list) and len(clusters) > 0
            and all(isinstance(c, (list, tuple)) and len(c) > 0 for c in clusters))


def _cluster_problems(codes: set, clusters, a: int | None) -> list[str]:
    if not _well_formed(clusters):
        return ["clusters: expected a non-empty list of non-empty clusters"]
    out, where = [], {}
    for i, cluster in enumerate(clusters):
        for code in cluster:
            if not isinstance(code, str):
                out.append(f"cluster {i}: code {code!r} is not a string")
            elif code in where:
                out.append(f"code {code!r} is in cluster {where[code]} and cluster {i}")
            else:
                where[code] = i
    missing = sorted(codes - set(where))
    if missing:
        out.append(f"{len(missing)} input code(s) in no cluster, e.g. {missing[:5]}")
    if a is not None:
        if len(where) < a and len(clusters) != 1:
            out.append(f"only {len(where)} codes (< {a}) but {len(clusters)} clusters; "
                       "they must form one cluster")
        if len(where) >= a:
            out += [f"cluster {i} has {len(c)} codes, fewer than the minimum anonymity set {a}"
                    for i, c in enumerate(clusters) if len(c) < a]
    return out


def _duplicate_rows(released: pd.DataFrame) -> list[str]:
    dup = released.astype(str).duplicated()
    if dup.any():
        row = released[dup].iloc[0]
        return [f"released row ({row['patient_id']}, {row['code']}) appears "
                f"{int(dup.sum()) + 1}+ times"]
    return []


def _read_map(dummy_map: pd.DataFrame) -> tuple[dict, dict, list[str]]:
    need = ["pseudonym", "is_dummy", "source_patient_id"]
    if any(c not in dummy_map.columns for c in need):
        return {}, {}, [f"dummy map: needs columns {need}, has {list(dummy_map.columns)}"]
    names = dummy_map["pseudonym"].astype(str).tolist()
    flags = [_flag(v) for v in dummy_map["is_dummy"].tolist()]
    out = []
    if len(set(names)) != len(names):
        out.append("dummy map: a pseudonym appears more than once")
    if any(f is None for f in flags):
        out.append("dummy map: is_dummy must be true/false")
    sources = dummy_map["source_patient_id"].astype(str).tolist()
    return dict(zip(names, flags)), dict(zip(names, sources)), out


def _flag(v) -> bool | None:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    s = str(v).strip().lower()
    return True if s in TRUE else False if s in FALSE else None


def _map_covers(shown: dict, is_dummy: dict, source: dict, real_sets: dict) -> list[str]:
    out = []
    unmapped = [p for p in shown if p not in is_dummy]
    if unmapped:
        out.append(f"{len(unmapped)} released patient(s) not in the dummy map, e.g. {unmapped[:3]}")
    absent = [p for p in is_dummy if p not in shown]
    if absent:
        out.append(f"{len(absent)} mapped pseudonym(s) not released, e.g. {absent[:3]}")
    reals = Counter(source[p] for p, d in is_dummy.items() if not d)
    twice = [r for r, n in reals.items() if n > 1]
    if twice:
        out.append(f"{len(twice)} real patient(s) released more than once, e.g. {twice[:3]}")
    lost = [r for r in real_sets if r not in reals]
    if lost:
        out.append(f"{len(lost)} real patient(s) missing from the release, e.g. {lost[:3]}")
    strangers = [r for r in reals if r not in real_sets]
    if strangers:
        out.append(f"{len(strangers)} 'real' patient(s) not in the input, e.g. {strangers[:3]}")
    return out


def _patients(shown: dict, is_dummy: dict, source: dict, real_sets: dict) -> list[str]:
    out, seen = [], Counter()
    originals = set(real_sets.values())
    for p, codes in shown.items():
        if p not in is_dummy:
            continue
        src = real_sets.get(source[p])
        if not is_dummy[p]:
            if src is not None and codes != src:
                out.append(f"real patient {source[p]} (released as {p}) was changed")
            continue
        if src is None:
            out.append(f"dummy {p}: source {source[p]!r} is not an input patient")
        elif len(codes) != len(src):
            out.append(f"dummy {p} has {len(codes)} codes, its source {source[p]} has {len(src)}")
        if codes in originals:
            out.append(f"dummy {p} repeats the code set of a real patient")
        seen[codes] += 1
    repeats = sum(n - 1 for n in seen.values() if n > 1)
    if repeats:
        out.append(f"{repeats} dummy code set(s) repeat another dummy's")
    return out


def _flatness(shown: dict, clusters) -> list[str]:
    counts = Counter(c for codes in shown.values() for c in codes)
    out = []
    known = {c for cl in clusters for c in cl}
    stray = sorted(set(counts) - known)
    if stray:
        out.append(f"{len(stray)} released code(s) in no cluster, e.g. {stray[:5]}")
    for i, cluster in enumerate(clusters):
        f = [counts.get(c, 0) for c in cluster]
        if max(f) - min(f) > 1:
            lo, hi = cluster[int(np.argmin(f))], cluster[int(np.argmax(f))]
            out.append(f"cluster {i} is not flat: code {lo!r} in {min(f)} patients, "
                       f"code {hi!r} in {max(f)}")
    return out
