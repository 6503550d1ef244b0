"""Re-identification risk of one lattice node (El Emam et al. 2012, appendix section 5) by the
paper's sampling experiment, stopped by a confidence-interval rule; classes counted on bitsets.
Readings chosen and why: docs/methods/hhp.md#claims-risk."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from anonymizers.claims.adversary import adversary_power, eta_cap, member_simpson
from anonymizers.claims.recoding import Prepared
from anonymizers.claims.truncation import removed_claims

Z95 = 1.959963984540054
WORDS_PER_CHUNK = 32
CHUNK_ROWS = 4096


@dataclass(frozen=True)
class RiskSettings:
    """The parameters of section 5 (documented on ``HHPConfig``)."""

    k: int = 5
    max_sup: float = 0.05
    p_max: int = 5
    p_rounding: str = "round"
    eta_sd: float = 2.0
    sample_size: int = 10_000
    max_iterations: int = 1_000
    min_iterations: int = 2
    ci_halfwidth: float = 0.005
    seed: int = 0


@dataclass(frozen=True)
class NodeRisk:
    """The measured risk of one node.  ``low_by_truncation``: mean proportion
    of drawn members made low risk because their sampled values were
    truncated away."""

    node: tuple[int, ...]
    risk: float
    ci_halfwidth: float | None
    iterations: int
    candidate: bool
    truncated_claims: int
    low_by_truncation: float
    seconds: float


@dataclass(frozen=True)
class NodeState:
    """A node's generalization: labels per claim QI (claims) and member QI
    (members), and the claims truncation removes."""

    node: tuple[int, ...]
    claim_labels: tuple[np.ndarray, ...]
    member_labels: tuple[np.ndarray, ...]
    removed: np.ndarray


class _Entries:
    """(member, label) -> number of the member's claims with that label, in D."""

    def __init__(self, member: np.ndarray, labels: np.ndarray, n_labels: int):
        self.n_labels = max(n_labels, 1)
        self.keys, counts = np.unique(member * self.n_labels + labels, return_counts=True)
        self.count = counts.astype(np.int64)
        self.member = self.keys // self.n_labels
        self.label = self.keys % self.n_labels
        self.holders = np.bincount(self.label, minlength=self.n_labels)

    def lookup(self, keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``counts`` (aligned with ``self.keys``) at ``keys``; 0 where absent."""
        at = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
        if not len(self.keys):
            return np.zeros(len(keys), dtype=np.int64)
        return np.where(self.keys[at] == keys, counts[at], 0)


class RiskModel:
    """Node risk on one prepared data set; caches what depends on a single
    quasi-identifier's level (entries, p) across nodes."""

    def __init__(self, prepared: Prepared, settings: RiskSettings):
        self.prep = prepared
        self.s = settings
        self.eta = np.minimum(prepared.n_claims, eta_cap(prepared.n_claims, settings.eta_sd))
        self._entries: dict[tuple[int, int], _Entries] = {}
        self._power: dict[tuple[int, int], np.ndarray] = {}

    def entries(self, h: int, level: int) -> _Entries:
        if (h, level) not in self._entries:
            q = self.prep.claim_qis[h]
            self._entries[(h, level)] = _Entries(self.prep.member, q.at(level).astype(np.int64),
                                                 q.n_labels(level))
        return self._entries[(h, level)]

    def power(self, h: int, level: int) -> np.ndarray:
        """p of every member on claim quasi-identifier h at ``level`` (eq. 1)."""
        if (h, level) not in self._power:
            e = self.entries(h, level)
            d = member_simpson(e.member, e.count, self.prep.n_claims)
            self._power[(h, level)] = adversary_power(self.eta, 1.0 - d, self.s.p_max,
                                                      self.s.p_rounding)
        return self._power[(h, level)]

    def state(self, node: tuple[int, ...]) -> NodeState:
        """Generalize to ``node`` (claim QI levels first) and truncate."""
        prep = self.prep
        nc = len(prep.claim_qis)
        claim_labels = tuple(q.at(lv) for q, lv in zip(prep.claim_qis, node[:nc]))
        member_labels = tuple(q.at(lv) for q, lv in zip(prep.member_qis, node[nc:]))
        n = prep.n_members
        if claim_labels and n:
            low = np.min([self.entries(h, lv).holders[lab] - 1
                          for h, (lab, lv) in enumerate(zip(claim_labels, node[:nc]))], axis=0)
            score = 1.0 - low / n
        else:
            score = np.zeros(len(prep.member))
        removed = removed_claims(prep.member, prep.n_claims, score,
                                 np.arange(len(prep.member)), prep.threshold)
        return NodeState(tuple(node), claim_labels, member_labels, removed)

    def evaluate(self, node: tuple[int, ...]) -> NodeRisk:
        """Steps 1-5 of section 5 for ``node``."""
        t0 = time.perf_counter()
        st = self.state(node)
        if self.prep.n_members == 0:
            return NodeRisk(tuple(node), 0.0, 0.0, 0, True, 0, 0.0, time.perf_counter() - t0)
        run = _NodeRun(self, st)
        rng = np.random.default_rng(np.random.SeedSequence(self.s.seed,
                                                           spawn_key=tuple(int(x) for x in node)))
        props, lows = [], []
        half = None
        for _ in range(self.s.max_iterations):
            high, low = run.iteration(rng)
            props.append(high)
            lows.append(low)
            if len(props) >= max(self.s.min_iterations, 2):
                half = Z95 * float(np.std(props, ddof=1)) / np.sqrt(len(props))
                if half <= self.s.ci_halfwidth:
                    break
        risk = float(np.mean(props))
        return NodeRisk(tuple(node), risk, half, len(props), risk <= self.s.max_sup,
                        int(st.removed.sum()), float(np.mean(lows)), time.perf_counter() - t0)


class _NodeRun:
    """The sampling experiment of one node: D' counts, member-QI blocks and
    token bitsets (built on demand, kept across iterations)."""

    def __init__(self, model: RiskModel, st: NodeState):
        prep, s = model.prep, model.s
        self.prep, self.s, self.P = prep, s, s.p_max
        nc = len(prep.claim_qis)
        self.entries = [model.entries(h, lv) for h, lv in enumerate(st.node[:nc])]
        self.power = [model.power(h, lv) for h, lv in enumerate(st.node[:nc])]
        self.labels = st.claim_labels
        self.kept = [self._d_prime(e, lab, st.removed) for e, lab in zip(self.entries, self.labels)]
        self.offset = np.r_[0, np.cumsum([e.n_labels for e in self.entries])].astype(np.int64)
        self._blocks(st.member_labels)
        n = prep.n_members
        self.W = (n + 63) // 64
        self.bits = np.full((1, self.W), np.uint64(0xFFFFFFFFFFFFFFFF))  # row 0: no constraint
        self.row_of = np.full(int(self.offset[-1]) * self.P + 1, -1, dtype=np.int64)

    def _d_prime(self, e: _Entries, labels: np.ndarray, removed: np.ndarray) -> np.ndarray:
        """Claim counts per (member, label) left after truncation (D')."""
        if not removed.any():
            return e.count
        keys = self.prep.member[removed] * e.n_labels + labels[removed]
        gone_keys, gone = np.unique(keys, return_counts=True)
        out = e.count.copy()
        out[np.searchsorted(e.keys, gone_keys)] -= gone
        return out

    def _blocks(self, member_labels) -> None:
        n = self.prep.n_members
        key = np.zeros(n, dtype=np.int64)
        for lab in member_labels:
            key = key * (int(lab.max()) + 1 if len(lab) else 1) + lab
        _, block = np.unique(key, return_inverse=True)
        order = np.argsort(block, kind="stable")
        self.pos = np.empty(n, dtype=np.int64)
        self.pos[order] = np.arange(n)
        sizes = np.bincount(block)
        self.block = block.astype(np.int64)
        self.block_lo = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        self.block_hi = np.cumsum(sizes).astype(np.int64)

    def iteration(self, rng: np.random.Generator) -> tuple[float, float]:
        """One draw of ``sample_size`` members: (high-risk, low-by-truncation) shares."""
        prep, S = self.prep, self.s.sample_size
        drawn = rng.integers(0, prep.n_members, size=S)
        sample, token, ok = self._tokens(drawn, rng)
        self_ok = np.ones(S, dtype=bool)
        self_ok[sample[~ok]] = False
        queries, which = self._queries(drawn, sample, token, self_ok)
        size = np.full(S, 0, dtype=np.int64)
        if len(queries):
            size[self_ok] = self._class_sizes(queries)[which]
        high = self_ok & (size < self.s.k)
        return float(high.mean()), float((~self_ok).mean())

    def _tokens(self, drawn: np.ndarray, rng: np.random.Generator):
        """Per drawn member (``sample`` index): the tokens of its sampled values
        and whether its own D' holds them."""
        prep, P = self.prep, self.P
        n_drawn = prep.n_claims[drawn]
        start = prep.starts[drawn]
        samples, tokens, oks = [], [], []
        for h, e in enumerate(self.entries):
            q = np.minimum(self.power[h][drawn], n_drawn)
            picks = _floyd(n_drawn, q, P, rng)
            s_idx, col = np.nonzero(picks >= 0)
            lab = self.labels[h][start[s_idx] + picks[s_idx, col]].astype(np.int64)
            pair, cnt = np.unique(s_idx * e.n_labels + lab, return_counts=True)
            s_of, lab_of = pair // e.n_labels, pair % e.n_labels
            have = e.lookup(drawn[s_of] * e.n_labels + lab_of, self.kept[h])
            samples.append(s_of)
            tokens.append((self.offset[h] + lab_of) * P + cnt - 1)
            oks.append(have >= cnt)
        if not samples:
            z = np.zeros(0, dtype=np.int64)
            return z, z, np.zeros(0, dtype=bool)
        return np.concatenate(samples), np.concatenate(tokens), np.concatenate(oks)

    def _queries(self, drawn, sample, token, self_ok):
        """Distinct (block, token rows) of the members that hold their sampled
        values, and the index of each such member's query."""
        keep = self_ok[sample]
        sample, token = sample[keep], token[keep]
        rows = self._rows(token)
        who = np.flatnonzero(self_ok)
        width = int(np.bincount(sample).max()) if len(sample) else 0
        mat = np.zeros((len(self_ok), width + 1), dtype=np.int64)
        mat[:, 0] = self.block[drawn]
        if len(sample):
            order = np.lexsort((rows, sample))
            s_sorted = sample[order]
            first = np.r_[0, np.flatnonzero(s_sorted[1:] != s_sorted[:-1]) + 1]
            col = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
            mat[s_sorted, col + 1] = rows[order]
        uniq, which = np.unique(mat[who], axis=0, return_inverse=True)
        return uniq, which.ravel()

    def _rows(self, token: np.ndarray) -> np.ndarray:
        """Bitset row of each token, building missing rows from D'."""
        new = np.unique(token[self.row_of[token] < 0])
        if len(new):
            self._build(new)
        return self.row_of[token]

    def _build(self, new: np.ndarray) -> None:
        P = self.P
        base = len(self.bits)
        self.row_of[new] = base + np.arange(len(new))
        want = np.zeros(len(self.row_of), dtype=bool)
        want[new] = True
        block = np.zeros((len(new), self.W), dtype=np.uint64)
        flat = block.reshape(-1)
        for h, e in enumerate(self.entries):
            reps = np.minimum(self.kept[h], P)
            idx = np.repeat(np.arange(len(reps)), reps)
            t = np.arange(len(idx)) - np.repeat(np.cumsum(reps) - reps, reps)
            tok = (self.offset[h] + e.label[idx]) * P + t
            hit = want[tok]
            if not hit.any():
                continue
            pos = self.pos[e.member[idx[hit]]]
            row = self.row_of[tok[hit]] - base
            np.bitwise_or.at(flat, row * self.W + (pos >> 6),
                             np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
        self.bits = np.concatenate([self.bits, block])

    def _class_sizes(self, queries: np.ndarray) -> np.ndarray:
        """Popcount of the AND of each query's token rows over its block."""
        blk, toks = queries[:, 0], queries[:, 1:]
        lo, hi = self.block_lo[blk], self.block_hi[blk]
        wlo, whi = lo >> 6, (hi - 1) >> 6
        n_chunks = (whi - wlo) // WORDS_PER_CHUNK + 1
        q_of = np.repeat(np.arange(len(queries)), n_chunks)
        first = np.repeat(np.cumsum(n_chunks) - n_chunks, n_chunks)
        w0 = wlo[q_of] + (np.arange(len(q_of)) - first) * WORDS_PER_CHUNK
        sizes = np.zeros(len(queries), dtype=np.int64)
        span = np.arange(WORDS_PER_CHUNK)
        for a in range(0, len(q_of), CHUNK_ROWS):
            q = q_of[a:a + CHUNK_ROWS]
            words = w0[a:a + CHUNK_ROWS, None] + span
            valid = words <= whi[q, None]
            words = np.minimum(words, self.W - 1)
            acc = _bounds_mask(words, lo[q, None], hi[q, None]) & np.where(valid, ~np.uint64(0),
                                                                           np.uint64(0))
            for t in range(toks.shape[1]):
                acc &= self.bits[toks[q, t][:, None], words]
            np.add.at(sizes, q, np.bitwise_count(acc).sum(axis=1, dtype=np.int64))
        return sizes


def _floyd(n: np.ndarray, q: np.ndarray, p_max: int, rng: np.random.Generator) -> np.ndarray:
    """For each row, ``q`` distinct positions in [0, n) uniformly (Floyd's
    algorithm, vectorized over rows); -1 pads to ``p_max`` columns."""
    out = np.full((len(n), p_max), -1, dtype=np.int64)
    for j in range(p_max):
        active = j < q
        ub = n - q + j
        t = np.floor(rng.random(len(n)) * (ub + 1)).astype(np.int64)
        dup = (out[:, :j] == t[:, None]).any(axis=1)
        t = np.where(dup, ub, t)
        out[:, j] = np.where(active, t, -1)
    return out


def _bounds_mask(words: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per word, the bits of positions in [lo, hi)."""
    base = words * 64
    start = np.clip(lo - base, 0, 64)
    end = np.clip(hi - base, 0, 64)
    return _low_bits(end) & ~_low_bits(start)


def _low_bits(n: np.ndarray) -> np.ndarray:
    full = n >= 64
    shifted = np.left_shift(np.uint64(1), np.minimum(n, 63).astype(np.uint64)) - np.uint64(1)
    return np.where(full, ~np.uint64(0), shifted)
