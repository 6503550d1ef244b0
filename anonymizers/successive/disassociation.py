"""Disassociation over successive releases (docs/threat-model-successive.md, Section 3.1): the
releases with their cluster membership, the linking adversary's attack, the stable-cluster defence.
Readings chosen and why: docs/methods/successive.md#successive-disassociation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from anonymizers.disassociation import DisassociationConfig
from anonymizers.disassociation.batches import Plan, combine, plan, run_batch
from anonymizers.errors import ParameterError
from anonymizers.successive.harness import ReleaseView, intersection_attack


@dataclass(frozen=True)
class Published:
    """A release, its private membership (``patient_id, cluster``) and the
    records it was made from (retained ones included): the state the next
    run of the scope starts from.  ``held_back``: arrivals not published."""

    release: dict
    membership: pd.DataFrame
    records: pd.DataFrame
    metrics: dict
    held_back: int = 0

    def tables(self) -> dict:
        """The mapping ``check.check`` reads for this release."""
        return {"release": self.release, "membership": self.membership, "truth": self.records}


def release(records: pd.DataFrame, config: DisassociationConfig) -> Published:
    """One disassociation run, as ``disassociate`` makes it, with its membership."""
    p = plan(records, config)
    return _publish(records, p, config)


def release_stable(records: pd.DataFrame, config: DisassociationConfig,
                   previous: Published | None) -> Published:
    """The next release of a scope under stable clusters with retention (see
    docs/methods/successive.md#successive-disassociation);
    the first release of a scope is a plain run."""
    if previous is None:
        return release(records, config)
    s = stable_plan(records, config, previous.membership, previous.records)
    out = _publish(s.records, s.plan, config)
    return Published(out.release, out.membership, out.records,
                     {**out.metrics, **s.figures}, s.held_back)


@dataclass(frozen=True)
class StablePlan:
    """The plan of a release under stable clusters: ``plan.rows`` holds every
    published patient (persisting and retained ones in their clusters, the
    admitted arrivals in new clusters numbered after them); ``records`` the
    distinct (patient_id, code) rows the release is made from (current
    records, then the retained ones); ``retained`` the ids kept from the
    previous release (they left); ``held`` the arrivals held back."""

    plan: Plan
    records: pd.DataFrame
    retained: frozenset
    held: frozenset
    figures: dict

    @property
    def held_back(self) -> int:
        return len(self.held)


def stable_plan(records: pd.DataFrame, config: DisassociationConfig,
                membership: pd.DataFrame, published: pd.DataFrame) -> StablePlan:
    """Plan the next release of a scope whose last release put each patient
    of ``membership`` (``patient_id, cluster``, clusters ``0 .. n - 1``) in a
    cluster, made from ``published`` (``patient_id, code``).  Ids are opaque
    strings: a caller may name patients by keyed links, as long as the same
    patient has the same id in ``records`` and in the previous release.

    Readings: a cluster keeps its number, so its refine window is the same
    in every release (refining may still join it with other clusters of the
    window); the arrivals' clusters follow, in HORPART order.  Arrivals fewer
    than k are held back whole (none of them is published), since they
    cannot fill a cluster of their own and joining an existing cluster would
    change its membership."""
    records = records[["patient_id", "code"]].astype(str).drop_duplicates(ignore_index=True)
    old = membership[["patient_id", "cluster"]].astype({"patient_id": str, "cluster": "int64"})
    if old["patient_id"].duplicated().any():
        raise ParameterError("membership", "names a patient in two clusters")
    n_old = int(old["cluster"].max()) + 1 if len(old) else 0
    if sorted(old["cluster"].unique().tolist()) != list(range(n_old)):
        raise ParameterError("membership", "clusters must be numbered 0 .. n - 1")
    current, known = pd.Index(records["patient_id"].unique()), pd.Index(old["patient_id"])
    published = published[["patient_id", "code"]].astype(str)
    left = published[~published["patient_id"].isin(current)
                     & published["patient_id"].isin(known)].drop_duplicates(ignore_index=True)
    missing = known.difference(current).difference(pd.Index(left["patient_id"].unique()))
    if len(missing):
        raise ParameterError("published", f"{len(missing)} patient(s) of the membership who "
                             "left have no published record to retain")
    arrived = records[~records["patient_id"].isin(known)]
    n_new = arrived["patient_id"].nunique()
    rows, held = [old], frozenset()
    kept = records[records["patient_id"].isin(known)]
    if n_new >= config.k:
        p_new = plan(arrived, config)
        rows.append(p_new.rows[["patient_id", "cluster"]].assign(
            cluster=lambda d: d["cluster"] + n_old))
        kept = records[records["patient_id"].isin(known) | records["patient_id"].isin(
            p_new.rows["patient_id"])]
    else:
        held = frozenset(arrived["patient_id"])
    out = pd.concat([kept, left], ignore_index=True)
    rows = pd.concat(rows, ignore_index=True).sort_values(["cluster", "patient_id"],
                                                         kind="stable", ignore_index=True)
    rows["position"] = rows.groupby("cluster").cumcount()
    sizes = rows.groupby("cluster").size().to_numpy()
    pairs = out.merge(rows, on="patient_id").groupby("cluster").size() \
        .reindex(range(len(sizes)), fill_value=0).to_numpy()
    figures = {"n_records": len(rows), "n_codes": int(out["code"].nunique()),
               "nnz": len(out), "merged_small_clusters": 0}
    retained = frozenset(left["patient_id"])
    metrics = {"held_back": len(held), "retained_left": len(retained),
               "persisting": int(current.isin(known).sum()), "arrived": int(n_new),
               "clusters_kept": n_old, "clusters_new": len(sizes) - n_old}
    return StablePlan(Plan(rows, len(sizes), figures, pairs, sizes), out, retained, held,
                      metrics)


def _publish(records: pd.DataFrame, p: Plan, config: DisassociationConfig) -> Published:
    fragment = run_batch(records, p.rows, config, p.n_clusters)
    doc, metrics = combine(p, [fragment], config)
    membership = p.rows[["patient_id", "cluster"]].reset_index(drop=True)
    return Published(doc.to_json(), membership,
                     records[["patient_id", "code"]].drop_duplicates(ignore_index=True), metrics)


# --- the attack ----------------------------------------------------------------------

def attack(releases: Sequence[dict], truth: Sequence[pd.DataFrame] | None, k: int | None = None,
           m: int | None = None) -> dict:
    """The linking adversary against disassociated ``releases`` (JSON dicts,
    oldest first) given ``truth[r]`` (``patient_id, code``: the records the
    adversary is granted); ``k``/``m`` default to the last release's."""
    if truth is None:
        raise ParameterError("truth", "a disassociated release names no patient: the attack "
                             "links records through the patients' records (give --truth)")
    if len(truth) != len(releases):
        raise ParameterError("truth", f"{len(truth)} truth tables for {len(releases)} releases")
    k = releases[-1]["k"] if k is None else k
    m = releases[-1]["m"] if m is None else m
    views, fits = [], []
    for doc, t in zip(releases, truth):
        clusters = _Clusters(doc)
        view, ambiguous = clusters.view(t)
        views.append(view)
        fits.append(ambiguous)
    report = intersection_attack(views, k, m)
    report["records_fitting_several_clusters"] = fits
    return report


class _Clusters:
    """Per cluster: its chunks as code -> subrecord numbers (a set of codes
    lies in one subrecord when their numbers intersect)."""

    def __init__(self, doc: dict):
        n = len(doc["clusters"])
        self.chunks: list[list[tuple[frozenset, dict, set]]] = [[] for _ in range(n)]
        for ci, c in enumerate(doc["clusters"]):
            for ch in c["record_chunks"]:
                self.chunks[ci].append(_chunk(ch["codes"], ch["subrecords"]))
            self.chunks[ci].append((frozenset(map(str, c["item_chunk"])), None, set()))
        for sh in doc.get("shared_chunks", []):
            chunk = _chunk(sh["codes"], sh["subrecords"])
            for ci in sh["clusters"]:
                self.chunks[ci].append(chunk)
        self.offering: dict[str, set] = {}
        for ci, chunks in enumerate(self.chunks):
            for domain, _, _ in chunks:
                for c in domain:
                    self.offering.setdefault(c, set()).add(ci)

    def offering_all(self, codes) -> set:
        """Clusters offering every one of ``codes``."""
        return set.intersection(*(self.offering.get(c, set()) for c in codes)) if codes \
            else set(range(len(self.chunks)))

    def holds(self, ci: int, codes: frozenset) -> bool:
        """Could a record of cluster ``ci`` hold every one of ``codes``?"""
        rest = set(codes)
        for domain, where, _ in self.chunks[ci]:
            mine = rest & domain
            if not mine:
                continue
            rest -= mine
            if where is not None and not set.intersection(*(where[c] for c in mine)):
                return False
        return not rest

    def fits(self, ci: int, codes: frozenset) -> bool:
        """Is a record of exactly ``codes`` one of cluster ``ci``'s?  (Called
        only for clusters offering every code.)"""
        return all(where is None or frozenset(codes & domain) in subs
                   for domain, where, subs in self.chunks[ci])

    def view(self, truth: pd.DataFrame) -> tuple[ReleaseView, int]:
        t = truth[["patient_id", "code"]].astype(str)
        atoms = {p: frozenset(g) for p, g in t.groupby("patient_id")["code"]}
        owner: dict[str, list[int]] = {}
        by_record: dict[frozenset, list[int]] = {}
        for p, codes in atoms.items():
            if codes not in by_record:
                by_record[codes] = [ci for ci in self.offering_all(codes)
                                    if self.fits(ci, codes)]
            owner[p] = by_record[codes]
        fitting: dict[int, set] = {}
        for p, cs in owner.items():
            for ci in cs:
                fitting.setdefault(ci, set()).add(p)

        def candidates(s: frozenset) -> frozenset:
            ok = [ci for ci in self.offering_all(s) if self.holds(ci, s)]
            return frozenset().union(*(fitting.get(ci, ()) for ci in ok))
        return ReleaseView(atoms, candidates), sum(len(cs) > 1 for cs in owner.values())


def _chunk(codes, subrecords) -> tuple[frozenset, dict, set]:
    where: dict[str, set] = {str(c): set() for c in codes}
    for i, s in enumerate(subrecords):
        for c in s:
            where[str(c)].add(i)
    return frozenset(where), where, {frozenset(map(str, s)) for s in subrecords}
