"""GCCens over successive releases (docs/threat-model-successive.md, Section 3.4): the union
attack on k-map and the union-safe defence.
Readings chosen and why: docs/methods/successive.md#successive-gccens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.censoring import GCCensConfig, gccens, release_document
from anonymizers.errors import ParameterError
from anonymizers.successive.harness import pseudonym_links

Multiset = dict[str, int]


class Population:
    """Population records as a sparse code-by-record count matrix; ``dis``
    counts the records containing a multiset."""

    def __init__(self, population: pd.DataFrame):
        counts = population["count"].astype(np.int64) if "count" in population.columns else 1
        t = pd.DataFrame({"p": population["patient_id"].astype(str),
                          "c": population["code"].astype(str), "n": counts})
        t = t.groupby(["c", "p"], as_index=False)["n"].sum()
        codes, ci = np.unique(t["c"].to_numpy(), return_inverse=True)
        people, pi = np.unique(t["p"].to_numpy(), return_inverse=True)
        self.n = len(people)
        self.col = {c: i for i, c in enumerate(codes.tolist())}
        self.by_code = sp.csr_matrix((t["n"].to_numpy(), (ci, pi)), shape=(len(codes), self.n))

    def dis(self, d: Multiset) -> int:
        rows = None
        for code, need in d.items():
            if code not in self.col:
                return 0
            i = self.col[code]
            lo, hi = self.by_code.indptr[i], self.by_code.indptr[i + 1]
            have = self.by_code.indices[lo:hi][self.by_code.data[lo:hi] >= need]
            rows = have if rows is None else np.intersect1d(rows, have, assume_unique=True)
            if len(rows) == 0:
                return 0
        return self.n if rows is None else len(rows)


def union(a: Multiset, b: Multiset) -> Multiset:
    return {c: max(a.get(c, 0), b.get(c, 0)) for c in a.keys() | b.keys()}


def unions(releases: Sequence[dict], keys: Sequence[pd.DataFrame]) -> dict[str, Multiset]:
    """Per source patient, the union of its records over ``releases``."""
    out: dict[str, Multiset] = {}
    for doc, key in zip(releases, keys):
        source = dict(zip(key["patient_id"].astype(str), key["original_id"].astype(str)))
        for rec in doc["records"]:
            p = source[str(rec["patient_id"])]
            out[p] = union(out.get(p, {}), {str(c): int(n) for c, n in rec["codes"].items()})
    return out


# --- the attack ----------------------------------------------------------------------

def attack(releases: Sequence[dict], truth: Sequence[pd.DataFrame] | None,
           k: int | None = None, population: pd.DataFrame | None = None) -> dict:
    """The union attack on GCCens releases (JSON dicts, oldest first):
    ``truth[r]`` is release r's key (``patient_id`` pseudonym,
    ``original_id``); without it, records are linked by equal pseudonyms.
    ``population``: the population the last release was k-mapped against."""
    if population is None:
        raise ParameterError("population", "k-map is judged against the population: give it")
    k = releases[-1]["k"] if k is None else k
    links = None
    if truth is not None and len(truth) >= 2:
        links = pseudonym_links([dict(zip(t["original_id"].astype(str),
                                          t["patient_id"].astype(str))) for t in truth])
    if truth is None:  # link by equal pseudonyms: the pseudonym is the patient
        truth = [pd.DataFrame({"patient_id": [r["patient_id"] for r in doc["records"]],
                               "original_id": [r["patient_id"] for r in doc["records"]]})
                 for doc in releases]
    if len(truth) != len(releases):
        raise ParameterError("truth", f"{len(truth)} keys for {len(releases)} releases")
    pop = Population(population)
    joined = unions(releases, truth)
    last = set(truth[-1]["original_id"].astype(str))
    seen_before = set().union(*(set(t["original_id"].astype(str)) for t in truth[:-1]))
    below = []
    for p in last:
        d = joined[p]
        n = pop.dis(d)
        if n < k:
            below.append({"linked": p in seen_before, "codes": sum(d.values()),
                          "candidates": n})
    below.sort(key=lambda b: b["candidates"])
    return {"k": k, "targets": len(last), "linked_targets": len(last & seen_before),
            "targets_breached": len(below), "breaches": below[:20], "breached": bool(below),
            "pseudonym_links": links}


# --- the defence ---------------------------------------------------------------------

@dataclass(frozen=True)
class Published:
    """A GCCens release (the JSON document), its key, and the union of every
    patient's records over the scope's releases so far (the private state)."""

    release: dict
    key: pd.DataFrame
    unions: dict[str, Multiset]
    narrowed: int = 0

    def tables(self, population: pd.DataFrame | None = None) -> dict:
        out = {"release": self.release, "key": self.key}
        if population is not None:
            out["population"] = population
        return out


def release(sample: pd.DataFrame, population: pd.DataFrame, config: GCCensConfig,
            previous: Published | None = None, union_safe: bool = True) -> Published:
    """A GCCens run; with ``previous`` and ``union_safe``, the defence of
    docs/methods/successive.md#successive-gccens
    (``union_safe=False`` is the plain run, for the harness)."""
    result, key = gccens(sample, population, config)
    doc = release_document(result)
    earlier = previous.unions if previous is not None else {}
    narrowed = 0
    if union_safe and earlier:
        narrowed = _narrow(doc, key, earlier, Population(population), config.k)
    state = dict(earlier)
    source = dict(zip(key["patient_id"].astype(str), key["original_id"].astype(str)))
    for rec in doc["records"]:
        p = source[str(rec["patient_id"])]
        state[p] = union(state.get(p, {}), {str(c): int(n) for c, n in rec["codes"].items()})
    doc["metrics"]["union_safe_narrowed"] = narrowed
    if narrowed:  # the run's counts, after narrowing
        doc["metrics"]["instances_released"] = sum(
            int(n) for r in doc["records"] for n in r["codes"].values())
    return Published(doc, key, state, narrowed)


def narrowed(records, owner: dict, earlier: dict, pop: Population, k: int) -> dict:
    """The defence's decision: ``records`` are (pseudonym, {code: count})
    pairs, ``owner`` maps a pseudonym to its patient as ``earlier`` (the
    published unions) names it.  Returns pseudonym -> the record capped at
    its patient's earlier union, for each record whose union with it is not
    k-mapped and that capping shortens (a record already within the earlier
    union cannot be helped: the union itself fails, and the check refuses)."""
    out = {}
    for p, codes in records:
        before = earlier.get(owner[p])
        if before is None or pop.dis(union(before, codes)) >= k:
            continue
        capped = {c: min(n, before[c]) for c, n in codes.items() if before.get(c, 0) > 0}
        if sum(capped.values()) < sum(codes.values()):
            out[p] = capped
    return out


def kept_after(cul: float, old: int, new: int) -> float:
    """A record's CUL once ``old`` released instances became ``new`` (the
    share lost is of the same denominator as before)."""
    return 1.0 - (1.0 - cul) * new / old


def _narrow(doc: dict, key: pd.DataFrame, earlier: dict, pop: Population, k: int) -> int:
    """Cap at the earlier union every record whose union with it is not
    k-mapped; update its CUL (censored share of the record's capped size)."""
    source = dict(zip(key["patient_id"].astype(str), key["original_id"].astype(str)))
    records = [(str(r["patient_id"]), {str(c): int(n) for c, n in r["codes"].items()})
               for r in doc["records"]]
    capped = narrowed(records, source, earlier, pop, k)
    for i, (rec, (p, codes)) in enumerate(zip(doc["records"], records)):
        if p in capped:
            rec["codes"] = capped[p]
            doc["cul"][i] = kept_after(doc["cul"][i], sum(codes.values()),
                                       sum(capped[p].values()))
    return len(capped)


def released_share(doc: dict, sample: pd.DataFrame) -> float:
    """Released code instances over the sample's (utility beside CUL)."""
    total = sample["count"].astype(np.int64).sum() if "count" in sample.columns else len(sample)
    out = sum(int(n) for r in doc["records"] for n in r["codes"].values())
    return out / total if total else 1.0
