"""ARE on W2 and MRE per constraint (Definitions 2-3, Section 6.1) measured one batch of clusters
at a time: no process holds more than one batch of the original records and of the release.
Readings chosen and why: docs/methods/disassociation.md#disassociation-batch-utility."""

from __future__ import annotations

from itertools import combinations
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import comb

from anonymizers.disassociation import metrics as dm
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.disassociation.release import Disassociated
from anonymizers.errors import ParameterError


class BatchedUtility:
    """First ``pool`` every batch's original records, then draw ``workload``,
    then ``add`` every batch (original records and its release fragment),
    then read ``are`` and ``mre``."""

    def __init__(self, vocabulary: Sequence[str], sizes: Sequence[int] = (1, 2)):
        self.vocab = pd.Index(np.sort(np.asarray(list(vocabulary), dtype=object)))
        if self.vocab.has_duplicates:
            raise ParameterError("vocabulary", "lists a code twice")
        self.sizes = sorted(set(sizes))
        self.keys: dict[int, list[np.ndarray]] = {s: [] for s in self.sizes}
        self.enumerated = 0
        self.queries: list[tuple[str, ...]] = []
        self.constraints: list = []
        self.n_w2 = self.n_policy = self.n_records = 0
        self.c_o = self.c_a = self.m_o = self.m_a = None

    def pool(self, records: pd.DataFrame) -> None:
        """Add the occurring code sets of one batch's records (long table)."""
        rec = dm.as_records(records)
        self.n_records += rec.n_records
        glob = self._global(rec.codes)
        lens = np.diff(rec.matrix.indptr)
        for s in self.sizes:
            self.enumerated += int(comb(lens, s, exact=False).sum().round()) if s > 1 else 0
            if s > 1 and self.enumerated > dm.MAX_ENUMERATED:
                raise ParameterError("sizes", f"more than {dm.MAX_ENUMERATED} code sets of "
                                     f"size {s} to enumerate; use a smaller size")
            rows = glob[dm.occurring_sets(rec, s)]
            keys = np.unique(rows @ (len(self.vocab) ** np.arange(s - 1, -1, -1)))
            self.keys[s].append(keys)

    def workload(self, rng: np.random.Generator, n_queries: int = 1000) -> list:
        """W2 over the pooled sets, drawn as ``metrics.w2_workload`` draws."""
        pools = {s: np.unique(np.concatenate(k)) if k else np.zeros(0, dtype=np.int64)
                 for s, k in self.keys.items()}
        pools = {s: p for s, p in pools.items() if len(p)}
        if not pools:
            raise ParameterError("sizes", f"no record holds {min(self.sizes)} codes or more")
        sizes = np.array(sorted(pools))
        chosen = sizes[rng.integers(len(sizes), size=n_queries)]
        V = len(self.vocab)
        out = []
        for s in chosen.tolist():
            key = int(pools[s][rng.integers(len(pools[s]))])
            idx = [(key // V ** (s - 1 - j)) % V for j in range(s)]
            out.append(tuple(self.vocab[idx].tolist()))
        return out

    def start(self, queries: list, constraints: list | None,
              w1: Sequence[Sequence[str]] = ()) -> None:
        """Count ``queries`` (W2), the W1 sets ``w1``, the ``constraints``
        and every code of the vocabulary as a one-code constraint."""
        self.n_w2, self.n_policy = len(queries), len(constraints or [])
        self.queries = list(queries) + [tuple(q) for q in w1]
        self.constraints = list(constraints or []) + [[c] for c in self.vocab]
        self.c_o, self.c_a = (np.zeros(len(self.queries), np.int64) for _ in range(2))
        self.m_o, self.m_a = (np.zeros(len(self.constraints), np.int64) for _ in range(2))

    def add(self, records: pd.DataFrame, fragment: Disassociated, first: int, window: int,
            seed: int) -> None:
        """Count one batch: its original records, and its fragment (clusters
        ``first ..`` of the release) reconstructed window by window."""
        self._count(records, self.c_o, self.m_o)
        self._count(draw(fragment, first, window, seed), self.c_a, self.m_a)

    def _count(self, data: pd.DataFrame, counts: np.ndarray, matched: np.ndarray) -> None:
        if not len(data):
            return
        rec = dm.as_records(data)
        counts += dm.count(rec, self.queries)
        if self.constraints:
            matched += dm.matches(rec, self.constraints)

    def are(self) -> float:
        """Definition 2 on W2 (see ``metrics.are``)."""
        return self._are(slice(0, self.n_w2), "the workload is empty")

    def are_w1(self) -> float:
        """Definition 2 on the W1 sets given to ``start``."""
        return self._are(slice(self.n_w2, None), "W1 is empty (no frequent code)")

    def _are(self, part: slice, empty: str) -> float:
        queries, c_o, c_a = self.queries[part], self.c_o[part], self.c_a[part]
        if not queries:
            raise ParameterError("queries", empty)
        if (c_o == 0).any():
            bad = list(queries[int(np.argmax(c_o == 0))])
            raise ParameterError("queries", f"query {bad} matches no original record")
        return float(np.mean(np.abs(c_a - c_o) / c_o))

    def mre(self) -> np.ndarray:
        """Definition 3 per constraint of the policy (see ``metrics.mre``)."""
        return self._mre(slice(0, self.n_policy))

    def mre_single_codes(self) -> np.ndarray:
        """Definition 3 per code of the vocabulary, as a one-code constraint."""
        return self._mre(slice(self.n_policy, None))

    def _mre(self, part: slice) -> np.ndarray:
        m_o, m_a = self.m_o[part].astype(float), self.m_a[part].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(m_o > 0, (m_o - m_a) / m_o, np.nan)

    def _global(self, codes: np.ndarray) -> np.ndarray:
        where = self.vocab.get_indexer(pd.Index(codes, dtype=object))
        if (where < 0).any():
            raise ParameterError("records", f"code {codes[int(np.argmax(where < 0))]!r} is "
                                 "not in the vocabulary")
        return where.astype(np.int64)


def frequent_sets(batches: Callable[[], Iterable[pd.DataFrame]], min_support_percent: float,
                  max_len: int = 4) -> list[frozenset]:
    """Every set of 1..``max_len`` codes held by at least
    ``min_support_percent`` % of the records (FP-Growth's rule: support as a
    fraction of the records, at least the threshold), by Apriori over
    ``batches()`` (a fresh iterable of long tables, one per batch, each
    patient in one batch): one pass per level, a level's candidates being
    the sets whose every subset one code smaller is frequent."""
    n_records, support = 0, {}
    for part in batches():
        rec = dm.as_records(part)
        n_records += rec.n_records
        for c, n in zip(rec.codes.tolist(), np.asarray((rec.matrix > 0).sum(axis=0)).ravel()):
            support[c] = support.get(c, 0) + int(n)
    threshold = float(min_support_percent) / 100

    def frequent(counts: dict) -> list[tuple]:
        return sorted(s for s, n in counts.items() if n_records and n / n_records >= threshold)

    level = frequent({(c,): n for c, n in support.items()})
    found = list(level)
    for size in range(2, max_len + 1):
        known = set(level)
        candidates = sorted({tuple(sorted(set(a) | set(b))) for a, b in combinations(level, 2)
                             if a[:-1] == b[:-1]})
        candidates = [c for c in candidates
                      if all(sub in known for sub in combinations(c, size - 1))]
        if not candidates:
            break
        counts = np.zeros(len(candidates), dtype=np.int64)
        for part in batches():
            if len(part):
                counts += dm.count(part, candidates)
        level = frequent(dict(zip(candidates, counts.tolist())))
        found += level
    return [frozenset(s) for s in found]


def w1_chains(batches: Callable[[], Iterable[pd.DataFrame]], min_support_percent: float,
              rng: np.random.Generator, n_chains: int = 250,
              max_size: int = 4) -> dict[int, list[tuple[str, ...]]]:
    """``metrics.w1_chains`` over ``frequent_sets(batches, min_support_percent,
    max_size)``, the same workload for the same ``rng``, without enumerating
    every frequent set: a chain's next step needs only the frequent sets one
    code larger than its current one, counted when first reached over the
    records that hold it.  On dense claims (the demo warehouse: 213,948
    frequent triples at 0.68 %) enumerating every frequent 4-set took hours;
    the chains need a few hundred such counts."""
    frames = [dm.as_records(part) for part in batches() if len(part)]
    if not frames:
        return {}
    vocab = np.unique(np.concatenate([r.codes for r in frames]).astype(str))
    matrix = sp.vstack([_columns(r, vocab) for r in frames], format="csr")
    del frames  # one 0/1 matrix of every record stays (about 100 MB at 113,000 members)
    by_code = matrix.tocsc()
    n_records, threshold = matrix.shape[0], float(min_support_percent) / 100
    support = np.asarray(matrix.sum(axis=0)).ravel()
    singles = [frozenset([c]) for c in vocab[support / n_records >= threshold].tolist()]
    children: dict[frozenset, list[frozenset]] = {}

    def grown(cur: frozenset) -> list[frozenset]:
        if cur not in children:
            rows = None
            for j in np.searchsorted(vocab, sorted(cur)):
                held = by_code.indices[by_code.indptr[j]:by_code.indptr[j + 1]]
                rows = held if rows is None else np.intersect1d(rows, held, assume_unique=True)
            counts = np.asarray(matrix[rows].sum(axis=0)).ravel()
            more = [c for c in vocab[counts / n_records >= threshold].tolist() if c not in cur]
            children[cur] = sorted((cur | {c} for c in more), key=sorted)
        return children[cur]

    out: dict[int, set] = {c: set() for c in range(1, max_size + 1)}
    for _ in range(n_chains if singles else 0):
        cur = singles[rng.integers(len(singles))]
        out[1].add(cur)
        while len(cur) < max_size and grown(cur):
            nxt = children[cur]
            cur = nxt[rng.integers(len(nxt))]
            out[len(cur)].add(cur)
    return {c: [tuple(sorted(s)) for s in sorted(v, key=sorted)] for c, v in out.items() if v}


def _columns(records, vocab: np.ndarray) -> sp.csr_matrix:
    """``records``' 0/1 matrix with its columns moved to ``vocab``'s."""
    m = records.matrix.tocoo()
    cols = np.searchsorted(vocab, records.codes.astype(str))[m.col]
    return sp.csr_matrix((np.ones(len(m.row), dtype=np.int32), (m.row, cols)),
                         shape=(records.n_records, len(vocab)))


def sets_to_enumerate(patient_ids: pd.Series, size: int) -> int:
    """How many code sets of ``size`` the records of a long table's distinct
    (patient, code) rows hold: what ``pool`` would enumerate."""
    lens = patient_ids.value_counts().to_numpy()
    return int(comb(lens, size, exact=False).sum().round())


def draw(fragment: Disassociated, first: int, window: int, seed: int) -> pd.DataFrame:
    """The fragment's reconstruction, window by window; records are named
    ``<window>:<pseudonym>`` so that the windows' fresh pseudonyms stay apart."""
    parts = []
    for w, part in windows(fragment, first, window):
        drawn = reconstruct(part, seed=np.random.SeedSequence([seed, w]))
        parts.append(drawn.assign(patient_id=f"{w}:" + drawn["patient_id"].astype(str)))
    return pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame({"patient_id": [], "code": []}, dtype=object)


def windows(fragment: Disassociated, first: int, window: int):
    """``(window index, sub-release)`` for each refine window the fragment
    covers (its clusters start at release cluster ``first``, a window
    boundary); shared chunks re-indexed to the sub-release."""
    if window < 1 or first % window:
        raise ParameterError("first", f"cluster {first} does not start a window of {window}")
    by_window: dict[int, list] = {}
    for s in fragment.shared_chunks:
        home = {c // window for c in s.clusters}
        if len(home) != 1:
            raise ParameterError("release", f"a shared chunk joins clusters {s.clusters} "
                                 "of two refine windows")
        lo = home.pop() * window
        by_window.setdefault(lo, []).append(
            type(s)(tuple(c - lo for c in s.clusters), s.codes, s.subrecords))
    n = len(fragment.clusters)
    for lo in range(0, n, window):
        yield (first + lo) // window, Disassociated(
            fragment.k, fragment.m, fragment.clusters[lo:lo + window],
            tuple(by_window.get(lo, ())))
