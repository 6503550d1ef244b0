"""The disassociated dataset ``D^A`` (Section 3.2, Figs. 4 and 10) as
dataclasses, its JSON form, and flat tables for loading into a database.

JSON (the CLI format)::

    {"k": K, "m": M,
     "clusters": [{"size": n,
                   "record_chunks": [{"codes": [...], "subrecords": [[...], ...]}],
                   "item_chunk": [...]}],
     "shared_chunks": [{"clusters": [i, ...], "codes": [...],
                        "subrecords": [[...], ...]}]}

A record chunk lists exactly ``size`` subrecords, empty ones included; a shared
chunk lists one subrecord for every record of the clusters it joins.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import pandas as pd

from anonymizers.errors import InputError


@dataclass(frozen=True)
class RecordChunk:
    """``codes`` is the chunk's domain ``T_i``; ``subrecords`` holds one
    subrecord per record of the cluster, in a random order."""

    codes: tuple[str, ...]
    subrecords: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Cluster:
    """A cluster ``P``: its size, record chunks and item chunk ``C_T``."""

    size: int
    record_chunks: tuple[RecordChunk, ...]
    item_chunk: tuple[str, ...]


@dataclass(frozen=True)
class SharedChunk:
    """A shared chunk of the joint cluster made of ``clusters`` (indices into
    the release's clusters): one subrecord per record of those clusters."""

    clusters: tuple[int, ...]
    codes: tuple[str, ...]
    subrecords: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Disassociated:
    """A disassociated dataset with the k and m it was made for."""

    k: int
    m: int
    clusters: tuple[Cluster, ...]
    shared_chunks: tuple[SharedChunk, ...] = ()

    @property
    def n_records(self) -> int:
        return sum(c.size for c in self.clusters)

    def to_json(self) -> dict:
        return {"k": self.k, "m": self.m,
                "clusters": [{"size": c.size,
                              "record_chunks": [{"codes": list(ch.codes),
                                                 "subrecords": [list(s) for s in ch.subrecords]}
                                                for ch in c.record_chunks],
                              "item_chunk": list(c.item_chunk)} for c in self.clusters],
                "shared_chunks": [{"clusters": list(s.clusters), "codes": list(s.codes),
                                   "subrecords": [list(r) for r in s.subrecords]}
                                  for s in self.shared_chunks]}

    @classmethod
    def from_json(cls, obj, source: str = "release") -> "Disassociated":
        """Parse and check the JSON form; InputError names what is wrong."""
        doc = _Reader(source)
        obj = doc.mapping(obj, "document", ("k", "m", "clusters"))
        k, m = doc.integer(obj["k"], "k", 1), doc.integer(obj["m"], "m", 1)
        clusters = tuple(doc.cluster(c, i) for i, c in enumerate(doc.seq(obj["clusters"],
                                                                            "clusters")))
        sizes = [c.size for c in clusters]
        shared = tuple(doc.shared(s, i, sizes)
                       for i, s in enumerate(doc.seq(obj.get("shared_chunks", []),
                                                     "shared_chunks")))
        return cls(k, m, clusters, shared)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Flat tables: ``clusters`` (cluster_id, size), ``record_chunks``
        (cluster_id, chunk_id, subrecord_id, code; empty subrecords have no
        row), ``item_chunks`` (cluster_id, code), ``shared_chunks`` (shared_id,
        subrecord_id, code) and ``shared_chunk_clusters`` (shared_id,
        cluster_id)."""
        rec = [(ci, hi, si, code) for ci, c in enumerate(self.clusters)
               for hi, ch in enumerate(c.record_chunks)
               for si, s in enumerate(ch.subrecords) for code in s]
        item = [(ci, code) for ci, c in enumerate(self.clusters) for code in c.item_chunk]
        sh = [(i, si, code) for i, s in enumerate(self.shared_chunks)
              for si, r in enumerate(s.subrecords) for code in r]
        shc = [(i, c) for i, s in enumerate(self.shared_chunks) for c in s.clusters]
        return {
            "clusters": _frame([(i, c.size) for i, c in enumerate(self.clusters)],
                               ["cluster_id", "size"]),
            "record_chunks": _frame(rec, ["cluster_id", "chunk_id", "subrecord_id", "code"]),
            "item_chunks": _frame(item, ["cluster_id", "code"]),
            "shared_chunks": _frame(sh, ["shared_id", "subrecord_id", "code"]),
            "shared_chunk_clusters": _frame(shc, ["shared_id", "cluster_id"]),
        }


def _frame(rows: list, columns: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=columns)
    for col in columns:
        df[col] = df[col].astype(object if col == "code" else "int64")
    return df


class _Reader:
    """Shape checks of the JSON form, with errors that point at the spot."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, problem: str):
        raise InputError(self.source, f"{where}: {problem}")

    def mapping(self, obj, where: str, keys) -> dict:
        if not isinstance(obj, dict):
            self.fail(where, f"expected an object, got {type(obj).__name__}")
        missing = [key for key in keys if key not in obj]
        if missing:
            self.fail(where, f"missing key(s) {missing}")
        return obj

    def seq(self, obj, where: str) -> list:
        if not isinstance(obj, list):
            self.fail(where, f"expected a list, got {type(obj).__name__}")
        return obj

    def integer(self, obj, where: str, low: int) -> int:
        if not isinstance(obj, int) or isinstance(obj, bool) or obj < low:
            self.fail(where, f"expected an integer >= {low}, got {obj!r}")
        return obj

    def codes(self, obj, where: str) -> tuple[str, ...]:
        out = tuple(self.seq(obj, where))
        for c in out:
            if not isinstance(c, str):
                self.fail(where, f"codes are strings, got {c!r}")
        return out

    def subrecords(self, obj, where: str, domain: tuple, n: int) -> tuple:
        subs = self.seq(obj, where)
        if len(subs) != n:
            self.fail(where, f"expected {n} subrecords (one per record), got {len(subs)}")
        # checked in bulk (a shared chunk lists a subrecord, mostly empty, for every
        # record of its joint cluster); the per-subrecord pass only names the culprit
        try:
            flat = set(chain.from_iterable(subs)) if all(type(s) is list for s in subs) \
                else None
        except TypeError:  # an unhashable code
            flat = None
        if flat is None or not flat <= set(domain):
            self._culprit(subs, where, set(domain))
        return tuple(map(tuple, subs))

    def _culprit(self, subs: list, where: str, allowed: set) -> None:
        for j, s in enumerate(subs):
            s = self.codes(s, f"{where}[{j}]")
            if not set(s) <= allowed:
                self.fail(f"{where}[{j}]", f"codes {sorted(set(s) - allowed, key=str)} are "
                          "not in the chunk's codes")

    def cluster(self, obj, i: int) -> Cluster:
        where = f"clusters[{i}]"
        obj = self.mapping(obj, where, ("size", "record_chunks", "item_chunk"))
        size = self.integer(obj["size"], f"{where}.size", 1)
        chunks = []
        for j, ch in enumerate(self.seq(obj["record_chunks"], f"{where}.record_chunks")):
            w = f"{where}.record_chunks[{j}]"
            ch = self.mapping(ch, w, ("codes", "subrecords"))
            codes = self.codes(ch["codes"], f"{w}.codes")
            chunks.append(RecordChunk(codes, self.subrecords(ch["subrecords"],
                                                             f"{w}.subrecords", codes, size)))
        item = self.codes(obj["item_chunk"], f"{where}.item_chunk")
        return Cluster(size, tuple(chunks), item)

    def shared(self, obj, i: int, sizes: list[int]) -> SharedChunk:
        where = f"shared_chunks[{i}]"
        obj = self.mapping(obj, where, ("clusters", "codes", "subrecords"))
        members = tuple(self.seq(obj["clusters"], f"{where}.clusters"))
        for c in members:
            if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < len(sizes):
                self.fail(f"{where}.clusters", f"{c!r} is not a cluster index "
                          f"(0..{len(sizes) - 1})")
        if len(set(members)) != len(members):
            self.fail(f"{where}.clusters", "a cluster is listed twice")
        codes = self.codes(obj["codes"], f"{where}.codes")
        n = sum(sizes[c] for c in members)
        return SharedChunk(members, codes,
                           self.subrecords(obj["subrecords"], f"{where}.subrecords", codes, n))
