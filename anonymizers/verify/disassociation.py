"""Verifier of DISASSOCIATION's release: k^m-anonymity as Guarantee 1 of
Loukides et al. 2014 (Section 3.1), re-derived from the definition, plus the
completeness of the release.  It reads the JSON form of the release (the CLI
format) and the input table; it imports nothing of the algorithm.

Guarantee 1: for every set ``S`` of at most ``m`` codes, some dataset that
the release could have come from has at least ``k`` records containing
``S``.  Attackers know codes of real records, so ``S`` ranges over the sets of
at most ``m`` codes contained in some input record.  The largest number of
records that can contain ``S`` in one reconstruction is computed as follows
(Section 3.2: every chunk's subrecords are permuted independently; an
item-chunk code may be on any number of its cluster's records):

- in a cluster ``P``: ``c_P(S) = min(|P|, support in C_i of S ∩ T_i over the
  record chunks C_i that S touches)``; ``|P|`` if S touches only the item
  chunk; 0 if a code of S is in no chunk available to ``P``;
- in a joint cluster ``J`` (the clusters a shared chunk joins), whose shared
  chunks' subrecords may go to any record of ``J``:
  ``min(sum over P in J of c_P(S minus the shared codes),
  support of S ∩ T_X in each shared chunk X that S touches)``;
- summed over clusters and joint clusters.

The number can only drop when codes are added to ``S``, so it suffices to
check, for every input record, its subsets of exactly ``m`` codes (the record
itself when it is shorter).

Also checked: the release's structure (subrecord counts, chunk domains
disjoint within a cluster and from the shared chunks joining it, joint
clusters either identical or disjoint: this verifier handles flat joint
clusters only and reports nested or overlapping ones); ``k``/``m`` as
stated; every input record released (cluster sizes sum to the input size)
and every input code present; no code that is not in the input; a code in no
item chunk keeps its exact support; sensitive codes only in item chunks.

With fewer than ``k`` input records (but at least one) no release can keep
Guarantee 1 as stated; the only acceptable release is then the empty one
(Definition 1 holds vacuously: there is no record to single out).
"""

from __future__ import annotations

from itertools import chain, combinations

import numpy as np
import pandas as pd

from anonymizers.records import Records, encode
from anonymizers.verify.verdict import Verdict

PROPERTY = "k^m-anonymity (Guarantee 1) of a disassociated release"
BATCH_ROWS = 1_000_000
RECORD, ITEM, SHARED = 0, 1, 2


def verify_disassociation(records: pd.DataFrame, release, k: int | None = None,
                          m: int | None = None, sensitive_codes=(),
                          repeated_codes: bool = False) -> Verdict:
    """Check ``release`` (the JSON dict, or an object with ``to_json()``)
    against the input ``records`` (long table ``patient_id, code``).  ``k`` and
    ``m`` default to the release's own; with ``repeated_codes`` the input is
    read as multisets (the i-th copy of a code is ``code#i``, Section 7.1)."""
    doc = release.to_json() if hasattr(release, "to_json") else release
    if not isinstance(doc, dict):
        return Verdict.from_violations(PROPERTY, 0, ["the release is not a JSON object"])
    bad: list[str] = []
    data = _input(records, repeated_codes)
    k = doc.get("k") if k is None else k
    m = doc.get("m") if m is None else m
    for name, want in (("k", k), ("m", m)):
        if doc.get(name) != want:
            bad.append(f"release states {name} = {doc.get(name)!r}, expected {want!r}")
    if not _positive_int(k) or not _positive_int(m):
        return Verdict.from_violations(PROPERTY, 0, bad + ["k and m must be positive integers"])
    rel = _Release(doc, data.codes, bad)
    if data.n_records < k:
        if rel.sizes.sum() or len(rel.kind):
            bad.append(f"the input has {data.n_records} records, fewer than k = {k}: "
                       "nothing can be released, yet the release holds records")
        return Verdict.from_violations(PROPERTY, 0, bad)
    if not bad:
        _check_completeness(rel, data, bad)
        _check_sensitive(rel, data, sensitive_codes, repeated_codes, bad)
    checked = 0
    if not bad:
        checked = _check_guarantee(rel, data, k, m, bad)
    return Verdict.from_violations(PROPERTY, checked, bad)


def _positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _input(records: pd.DataFrame, repeated: bool) -> Records:
    df = records[["patient_id", "code"]].copy()
    df["code"] = df["code"].astype(str)
    if repeated:
        nth = df.groupby(["patient_id", "code"], sort=False).cumcount() + 1
        df["code"] = df["code"] + "#" + nth.astype(str)
    return encode(df, "patient_id", "code")


class _Release:
    """The release as flat arrays over the input's code indices.

    Chunk ``c`` has kind ``kind[c]`` and is seen by clusters ``members[c]``;
    its domain is ``dom_code[dom_chunk == c]``; subrecord entries are
    (``ent_chunk``, ``ent_sub``, ``ent_code``).  Structural problems are
    appended to ``bad``.
    """

    def __init__(self, doc: dict, vocab: np.ndarray, bad: list[str]):
        self.vocab, self.bad, self.V = pd.Index(vocab), bad, len(vocab)
        clusters = doc.get("clusters")
        shared = doc.get("shared_chunks", [])
        if not isinstance(clusters, list) or not isinstance(shared, list):
            bad.append("the release needs lists 'clusters' and 'shared_chunks'")
            clusters, shared = [], []
        self.sizes = np.array([self._size(c, i) for i, c in enumerate(clusters)],
                              dtype=np.int64)
        self.kind, self.members, self.expected, self.where = [], [], [], []
        dom, subs = [], []
        for i, c in enumerate(clusters):
            c = c if isinstance(c, dict) else {}
            for j, ch in enumerate(_as_list(c.get("record_chunks"))):
                ch = ch if isinstance(ch, dict) else {}
                self._chunk(RECORD, (i,), f"cluster {i} record chunk {j}", ch, dom, subs)
            self._chunk(ITEM, (i,), f"cluster {i} item chunk",
                        {"codes": c.get("item_chunk"), "subrecords": []}, dom, subs)
        for i, ch in enumerate(shared):
            ch = ch if isinstance(ch, dict) else {}
            self._chunk(SHARED, self._members(ch.get("clusters"), i), f"shared chunk {i}",
                        ch, dom, subs)
        self.kind = np.array(self.kind, dtype=np.int64)
        self._flatten(dom, subs)
        self.group = self._groups()
        self._check_shape()

    def _size(self, c, i) -> int:
        size = c.get("size") if isinstance(c, dict) else None
        if not _positive_int(size):
            self.bad.append(f"cluster {i}: size {size!r} is not a positive integer")
            return 0
        return size

    def _members(self, members, i: int) -> tuple:
        members = _as_list(members)
        ok = {c for c in members if isinstance(c, int) and 0 <= c < len(self.sizes)}
        if len(ok) != len(members) or not ok:
            self.bad.append(f"shared chunk {i}: cluster list {members!r} is not a set of "
                            "cluster indices")
        return tuple(sorted(ok))

    def _chunk(self, kind: int, members: tuple, where: str, ch: dict, dom, subs) -> None:
        codes, records = _as_list(ch.get("codes")), _as_list(ch.get("subrecords"))
        if not all(type(r) is list for r in records):
            self.bad.append(f"{where}: every subrecord must be a list of codes")
            records = [r for r in records if type(r) is list]
        self.kind.append(kind)
        self.members.append(members)
        self.expected.append(0 if kind == ITEM else int(self.sizes[list(members)].sum()))
        self.where.append(where)
        dom.append(codes)
        subs.append(records)

    def _flatten(self, dom: list, subs: list) -> None:
        n_dom = [len(d) for d in dom]
        self.dom_chunk = np.repeat(np.arange(len(dom)), n_dom).astype(np.int64)
        self.dom_code = self._encode(list(chain.from_iterable(dom)), self.dom_chunk)
        n_sub = [len(s) for s in subs]
        self.n_sub = np.array(n_sub, dtype=np.int64)
        flat_subs = list(chain.from_iterable(subs))
        lens = np.array([len(r) for r in flat_subs], dtype=np.int64)
        self.sub_chunk = np.repeat(np.arange(len(subs)), n_sub).astype(np.int64)
        self.ent_sub = np.repeat(np.arange(len(flat_subs)), lens).astype(np.int64)
        self.ent_chunk = self.sub_chunk[self.ent_sub]
        self.ent_code = self._encode(list(chain.from_iterable(flat_subs)), self.ent_chunk)

    def _encode(self, codes: list, chunk: np.ndarray) -> np.ndarray:
        """Input code index of each code; unknown ones are reported, then -1."""
        try:
            idx = self.vocab.get_indexer(pd.Index(codes, dtype=object))
        except TypeError:
            idx = np.array([self.vocab.get_loc(c) if isinstance(c, str) and c in self.vocab
                            else -1 for c in codes], dtype=np.int64)
        idx = np.asarray(idx, dtype=np.int64)
        for i in np.flatnonzero(idx < 0)[:5]:
            self.bad.append(f"{self.where[chunk[i]]}: code {codes[i]!r} is not in the input")
        return idx

    def _groups(self) -> np.ndarray:
        """Joint cluster of every cluster (its own index when not joined)."""
        group = np.arange(len(self.sizes))
        owner: dict[int, tuple] = {}
        for kind, members in zip(self.kind.tolist(), self.members):
            if kind != SHARED:
                continue
            for c in members:
                if owner.setdefault(c, members) != members:
                    self.bad.append(f"cluster {c} is in joint clusters {owner[c]} and "
                                    f"{members}: only identical or disjoint joint clusters "
                                    "are supported")
                group[c] = min(members)
        return group

    def _check_shape(self) -> None:
        for c in np.flatnonzero(self.n_sub != np.array(self.expected, dtype=np.int64))[:5]:
            self.bad.append(f"{self.where[c]}: {self.n_sub[c]} subrecords, expected "
                            f"{self.expected[c]} (one per record)")
        dom_key = self.dom_chunk * self.V + self.dom_code
        if len(np.unique(dom_key)) != len(dom_key):
            self.bad.append("a chunk lists a code twice")
        ent_key = self.ent_chunk * self.V + self.ent_code
        for i in np.flatnonzero(~np.isin(ent_key, dom_key))[:5]:
            self.bad.append(f"{self.where[self.ent_chunk[i]]}: a subrecord holds a code "
                            "outside the chunk's codes")
        sub_key = self.ent_sub * self.V + self.ent_code
        if len(np.unique(sub_key)) != len(sub_key):
            self.bad.append("a subrecord lists a code twice")
        cluster, code, _ = self.availability()
        seen = cluster * self.V + code
        uniq, counts = np.unique(seen, return_counts=True)
        for key in uniq[counts > 1][:5]:
            self.bad.append(f"cluster {key // self.V}: code {self.vocab[key % self.V]!r} is "
                            "in two of the chunks it sees")

    def availability(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cluster, code, chunk) for every code of every chunk a cluster sees."""
        n_members = np.array([len(mm) for mm in self.members], dtype=np.int64)
        per_dom = n_members[self.dom_chunk]
        chunk = np.repeat(self.dom_chunk, per_dom)
        code = np.repeat(self.dom_code, per_dom)
        flat_members = np.array(list(chain.from_iterable(self.members)), dtype=np.int64)
        starts = np.cumsum(n_members) - n_members
        cluster = flat_members[_ragged(starts[self.dom_chunk], per_dom)]
        return cluster, code, chunk

    def chunk_support(self) -> np.ndarray:
        """Support of each domain entry (chunk, code) in its chunk's subrecords."""
        ent = self.ent_chunk * self.V + self.ent_code
        dom = self.dom_chunk * self.V + self.dom_code
        order = np.argsort(dom, kind="stable")
        sorted_dom = dom[order]
        at = np.searchsorted(sorted_dom, ent)
        out = np.zeros(len(dom), dtype=np.int64)
        if len(dom) and len(ent):
            np.add.at(out, order[np.minimum(at, len(dom) - 1)], 1)
        return out


def _as_list(x) -> list:
    return x if isinstance(x, list) else []


def _check_completeness(rel: _Release, data: Records, bad: list[str]) -> None:
    """Every record and code released; a code in no item chunk keeps its support."""
    if int(rel.sizes.sum()) != data.n_records:
        bad.append(f"the clusters hold {int(rel.sizes.sum())} records, the input "
                   f"{data.n_records}")
    missing = np.setdiff1d(np.arange(data.n_codes), rel.dom_code)
    if len(missing):
        bad.append(f"{len(missing)} input codes are missing from the release, e.g. "
                   f"{data.codes[missing[:5]].tolist()}")
    in_item = np.zeros(data.n_codes, dtype=bool)
    in_item[rel.dom_code[rel.kind[rel.dom_chunk] == ITEM]] = True
    released = np.bincount(rel.ent_code, minlength=data.n_codes)
    support = data.support()
    for c in np.flatnonzero(~in_item & (released != support))[:5]:
        bad.append(f"code {data.codes[c]!r} is in no item chunk but its released support "
                   f"{released[c]} differs from its input support {support[c]}")


def _check_sensitive(rel: _Release, data: Records, sensitive, repeated: bool,
                     bad: list[str]) -> None:
    names = set(map(str, sensitive))
    if not names:
        return
    base = np.array([c.rsplit("#", 1)[0] if repeated else c for c in data.codes.tolist()],
                    dtype=object)
    is_sensitive = np.isin(base, list(names))
    outside = rel.dom_code[(rel.kind[rel.dom_chunk] != ITEM) & is_sensitive[rel.dom_code]]
    if len(outside):
        bad.append(f"sensitive codes {data.codes[np.unique(outside)[:5]].tolist()} are "
                   "outside the item chunks")


def _check_guarantee(rel: _Release, data: Records, k: int, m: int, bad: list[str]) -> int:
    """Guarantee 1 over the maximal attacker sets; returns how many were checked."""
    tables = _Tables(rel, data.n_codes)
    checked = 0
    for sets in _attacker_sets(data, m):
        checked += len(sets)
        value = tables.max_holders(sets, k)
        for i in np.flatnonzero(value < k)[:5]:
            bad.append(f"codes {data.codes[sets[i]].tolist()} can be on at most "
                       f"{int(value[i])} records of any reconstruction (k = {k})")
    return checked


def _attacker_sets(data: Records, m: int):
    """Distinct subsets of exactly ``m`` codes of each record (the record itself
    when shorter), one array per set size."""
    mat = data.matrix
    lens = np.diff(mat.indptr)
    by_size: dict[int, list[np.ndarray]] = {}
    for n in np.unique(lens[lens > 0]).tolist():
        s = min(n, m)
        rows = np.flatnonzero(lens == n)
        codes = mat.indices[mat.indptr[rows][:, None] + np.arange(n)].astype(np.int64)
        template = np.array(list(combinations(range(n), s)), dtype=np.int64)
        step = max(1, 2_000_000 // len(template))
        for lo in range(0, len(rows), step):
            block = codes[lo:lo + step][:, template].reshape(-1, s)
            by_size.setdefault(s, []).append(_unique_rows(block, data.n_codes))
    for _, blocks in sorted(by_size.items()):
        yield _unique_rows(np.concatenate(blocks), data.n_codes)


def _unique_rows(rows: np.ndarray, n_codes: int) -> np.ndarray:
    """``np.unique(rows, axis=0)``, through one int64 key per row when the
    codes fit (sorting integers is several times faster than sorting rows)."""
    width = rows.shape[1]
    if n_codes ** width >= 2 ** 62:
        return np.unique(rows, axis=0)
    scale = n_codes ** np.arange(width - 1, -1, -1, dtype=np.int64)
    keys = np.unique(rows @ scale)
    return (keys[:, None] // scale) % n_codes


class _Tables:
    """Where each code is available to each cluster, and subrecord contents,
    as sorted integer keys for vectorised look-ups."""

    FIRST_PASS = 4

    def __init__(self, rel: _Release, n_codes: int):
        self.V = n_codes
        self.sizes = rel.sizes
        self.group = rel.group
        support = rel.chunk_support()
        cluster, code, chunk = rel.availability()
        per_dom = np.array([len(mm) for mm in rel.members], dtype=np.int64)[rel.dom_chunk]
        kind = rel.kind[chunk]
        supp = np.where(kind == ITEM, rel.sizes[cluster], np.repeat(support, per_dom))
        order = np.lexsort((cluster, code))  # by code, then cluster
        self.a_cluster, self.a_code, self.a_chunk = cluster[order], code[order], chunk[order]
        self.a_kind, self.a_supp = kind[order], supp[order]
        self.code_start = np.searchsorted(self.a_code, np.arange(n_codes))
        self.code_count = np.searchsorted(self.a_code, np.arange(n_codes), "right") - \
            self.code_start
        self.lookup = _Lookup(self.a_cluster * n_codes + self.a_code,
                              len(self.sizes) * n_codes)
        order = np.lexsort((rel.ent_sub, rel.ent_code, rel.ent_chunk))
        self.s_chunkcode = rel.ent_chunk[order] * n_codes + rel.ent_code[order]
        self.s_sub = rel.ent_sub[order]
        self.s_subcode = np.sort(rel.ent_sub * n_codes + rel.ent_code)

    def max_holders(self, sets: np.ndarray, k: int) -> np.ndarray:
        """Largest number of records holding each set in one reconstruction,
        exact when below ``k``; at least ``k`` otherwise.

        A first pass sums over at most ``FIRST_PASS`` candidate clusters per
        set (a partial sum can only be lower: it is a sound lower bound); only
        the sets it leaves below ``k`` are summed over all their clusters.
        """
        anchor = sets[np.arange(len(sets)), np.argmin(self.code_count[sets], axis=1)]
        value = self._batched(sets, anchor, self.FIRST_PASS)
        again = np.flatnonzero(value < k)
        if len(again):
            value[again] = self._batched(sets[again], anchor[again], None)
        return value

    def _batched(self, sets: np.ndarray, anchor: np.ndarray, cap: int | None) -> np.ndarray:
        counts = self.code_count[anchor]
        if cap is not None:
            counts = np.minimum(counts, cap)
        out = np.zeros(len(sets), dtype=np.int64)
        cost = np.cumsum(counts)
        lo = 0
        while lo < len(sets):
            hi = max(lo + 1, int(np.searchsorted(cost, cost[lo] + BATCH_ROWS)))
            out[lo:hi] = self._batch(sets[lo:hi], anchor[lo:hi], counts[lo:hi])
            lo = hi
        return out

    def _batch(self, sets: np.ndarray, anchor: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Sum over the first ``counts[i]`` clusters where set i's anchor code is
        available (all of them when ``counts`` is the full count)."""
        n, s = sets.shape
        sid = np.repeat(np.arange(n), counts)
        pos = _ragged(self.code_start[anchor], counts)
        cluster = self.a_cluster[pos]
        found = np.ones(len(sid), dtype=bool)
        chunk = np.zeros((len(sid), s), dtype=np.int64)
        kind = np.zeros((len(sid), s), dtype=np.int64)
        supp = np.zeros((len(sid), s), dtype=np.int64)
        for j in range(s):
            at = self.lookup.find(cluster * self.V + sets[sid, j])
            found &= at >= 0
            at = np.maximum(at, 0)
            chunk[:, j], kind[:, j], supp[:, j] = self.a_chunk[at], self.a_kind[at], \
                self.a_supp[at]
        sid, cluster = sid[found], cluster[found]
        chunk, kind, supp = chunk[found], kind[found], supp[found]
        part = self._part_supports(sets[sid], chunk, kind, supp)
        size = self.sizes[cluster]
        local = np.where(kind == SHARED, size[:, None], np.minimum(part, size[:, None]))
        shared = np.where(kind == SHARED, part, np.iinfo(np.int64).max).min(axis=1)
        # rows come sorted by set; one value per (set, joint cluster), then per set
        unit, first, inverse = np.unique(sid * len(self.sizes) + self.group[cluster],
                                         return_index=True, return_inverse=True)
        local_sum = np.bincount(inverse.ravel(), weights=local.min(axis=1),
                                minlength=len(unit))
        value = np.minimum(local_sum, shared[first])
        return np.bincount(sid[first], weights=value, minlength=n).astype(np.int64)

    def _part_supports(self, sets: np.ndarray, chunk: np.ndarray, kind: np.ndarray,
                       supp: np.ndarray) -> np.ndarray:
        """Support, in its chunk, of the part of the set in each position's chunk
        (single codes: the code's support; item chunk: the cluster size)."""
        part = supp.copy()
        s = sets.shape[1]
        for j in range(s):
            mates = (chunk == chunk[:, [j]]) & (kind != ITEM)[:, [j]]
            multi = mates.sum(axis=1) > 1
            if not multi.any():
                continue
            codes = np.where(mates[multi], sets[multi], -1)
            part[multi, j] = self._co_support(chunk[multi, j], codes)
        return part

    def _co_support(self, chunk: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Subrecords of ``chunk`` holding every code of each row (-1 = none)."""
        queries, inverse = np.unique(np.column_stack([chunk, codes]), axis=0,
                                     return_inverse=True)
        q_chunk, q_codes = queries[:, 0], queries[:, 1:]
        first = np.where(q_codes >= 0, q_codes, np.iinfo(np.int64).max).min(axis=1)
        key = q_chunk * self.V + first
        start = np.searchsorted(self.s_chunkcode, key)
        count = np.searchsorted(self.s_chunkcode, key, "right") - start
        qid = np.repeat(np.arange(len(queries)), count)
        sub = self.s_sub[_ragged(start, count)]
        ok = np.ones(len(qid), dtype=bool)
        for j in range(q_codes.shape[1]):
            code = q_codes[qid, j]
            look = sub * self.V + np.maximum(code, 0)
            idx = np.minimum(np.searchsorted(self.s_subcode, look), len(self.s_subcode) - 1)
            ok &= (code < 0) | (self.s_subcode[idx] == look)
        result = np.bincount(qid[ok], minlength=len(queries))
        return result[inverse.ravel()]


class _Lookup:
    """Position of integer keys in an array of distinct keys: a dense table
    when the key space is small, binary search otherwise."""

    DENSE_LIMIT = 64_000_000

    def __init__(self, keys: np.ndarray, space: int):
        self.dense = space <= self.DENSE_LIMIT
        if self.dense:
            self.table = np.full(max(space, 1), -1, dtype=np.int64)
            self.table[keys] = np.arange(len(keys))
        else:
            self.order = np.argsort(keys, kind="stable")
            self.sorted = keys[self.order]

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Index of each key, -1 when absent."""
        if self.dense:
            return self.table[keys]
        if not len(self.sorted):
            return np.full(len(keys), -1, dtype=np.int64)
        idx = np.minimum(np.searchsorted(self.sorted, keys), len(self.sorted) - 1)
        return np.where(self.sorted[idx] == keys, self.order[idx], -1)


def _ragged(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(start[i], start[i] + count[i])``."""
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(start - (np.cumsum(count) - count), count)
    return shift + np.arange(total)


def verify_disassociation_batches(records: pd.DataFrame, release, batches, k: int | None = None,
                                  m: int | None = None, sensitive_codes=(),
                                  repeated_codes: bool = False) -> Verdict:
    """Check a release made in batches, one batch at a time.

    ``batches`` lists ``(first, stop, patient_ids)``: the clusters
    ``first .. stop - 1`` of ``release`` are claimed to hold exactly the
    records of ``patient_ids``.  The claim is checked, not trusted: the
    ranges must tile the clusters, the patient sets must partition the
    input, and no shared chunk may join clusters of two batches.  Each batch
    is then verified as a release of its own records (``verify_disassociation``).
    That suffices for the whole release: a reconstruction of the whole is a
    reconstruction of every batch side by side, so a set held by ``k``
    records of one batch's reconstruction is held by ``k`` records of the
    whole one; completeness per batch implies completeness overall.
    """
    doc = release.to_json() if hasattr(release, "to_json") else release
    clusters = doc.get("clusters") if isinstance(doc, dict) else None
    shared = doc.get("shared_chunks", []) if isinstance(doc, dict) else None
    if not batches or not clusters or not isinstance(clusters, list) \
            or not isinstance(shared, list):
        # nothing released (fewer than k records?) or not a release: check it whole
        return verify_disassociation(records, doc, k, m, sensitive_codes, repeated_codes)
    bad = _check_tiling(records, clusters, shared, batches)
    if bad:
        return Verdict.from_violations(PROPERTY, 0, bad)
    checked = 0
    by_patient = records.groupby("patient_id", sort=False).indices
    for i, (first, stop, patients) in enumerate(batches):
        rows = np.concatenate([by_patient[p] for p in patients]) if len(patients) else \
            np.zeros(0, dtype=np.int64)
        part = {**doc, "clusters": clusters[first:stop],
                "shared_chunks": [{**s, "clusters": [c - first for c in s["clusters"]]}
                                  for s in shared if first <= min(s["clusters"]) < stop]}
        verdict = verify_disassociation(records.iloc[np.sort(rows)], part, k, m,
                                        sensitive_codes, repeated_codes)
        checked += verdict.checked
        bad += [f"batch {i} (clusters {first}..{stop - 1}): {v}" for v in verdict.violations]
    return Verdict.from_violations(PROPERTY, checked, bad)


def _check_tiling(records: pd.DataFrame, clusters: list, shared: list, batches) -> list[str]:
    """The batches' cluster ranges tile the release, their patients partition
    the input, and every shared chunk stays inside one batch."""
    bad = []
    expected = 0
    for first, stop, _ in batches:
        if first != expected or stop <= first:
            bad.append(f"batch cluster ranges do not tile the clusters: got {first}..{stop - 1}"
                       f" where cluster {expected} was next (a batch with no cluster "
                       "cannot hold records)")
        expected = stop
    if expected != len(clusters):
        bad.append(f"the batches cover {expected} clusters, the release has {len(clusters)}")
    claimed = pd.Index(np.concatenate([np.asarray(p, dtype=object) for _, _, p in batches])
                       if batches else np.zeros(0, dtype=object))
    if claimed.has_duplicates:
        bad.append("a patient is claimed by two batches")
    actual = pd.Index(pd.unique(records["patient_id"]))
    if len(claimed.difference(actual)) or len(actual.difference(claimed)):
        bad.append(f"the batches' patients ({claimed.nunique()}) are not the input's "
                   f"({len(actual)})")
    starts = np.array([b[0] for b in batches], dtype=np.int64)
    for j, s in enumerate(shared):
        members = s.get("clusters") if isinstance(s, dict) else None
        if not isinstance(members, list) or not members or \
                not all(isinstance(c, int) and 0 <= c < len(clusters) for c in members):
            bad.append(f"shared chunk {j}: cluster list {members!r} is not a set of cluster "
                       "indices")
            continue
        owner = np.searchsorted(starts, members, side="right") - 1
        if len(set(owner.tolist())) > 1:
            bad.append(f"shared chunk {j} joins clusters of several batches")
    return bad
