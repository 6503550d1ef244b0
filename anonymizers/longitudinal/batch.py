"""A-GS (or Baseline) costs of one trajectory against many at once, the MDAV distances (Tamersoy
2011, IV.3.2): the recurrence on total cost, vectorised over candidates and whole DP rows.
Readings chosen and why: docs/methods/lda.md#longitudinal-batch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonymizers.longitudinal.alignment import Pairs, Trees, weighted_lm
from anonymizers.longitudinal.loss import lm

PAD_CELLS = 1 << 15  # below this many padded cells a chunk is overhead-bound


@dataclass(frozen=True)
class Encoded:
    """All input trajectories, flat, as indices of distinct values.

    ``icd_val[p]`` indexes ``icd_nodes`` (node ids of the ICD tree), same for
    age; ``offsets`` delimit patients as in ``Trajectories``.
    """

    icd_val: np.ndarray
    age_val: np.ndarray
    icd_nodes: np.ndarray
    age_nodes: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def span(self, t: int) -> slice:
        return slice(self.offsets[t], self.offsets[t + 1])


class CostModel:
    """Cost tables of one alignment flavour: A-GS with weights, or Baseline
    (which the thesis runs without weights, i.e. w_icd = w_age = 1)."""

    def __init__(self, enc: Encoded, trees: Trees, w_icd: float, w_age: float):
        self.enc, self.trees, self.w_icd, self.w_age = enc, trees, w_icd, w_age
        sup_icd = lm(trees.icd, enc.icd_nodes, enc.icd_nodes == 0, 0) * w_icd
        sup_age = lm(trees.age, enc.age_nodes, enc.age_nodes == 0, 0) * w_age
        self.sup_flat = sup_icd[enc.icd_val] + sup_age[enc.age_val]

    def _table(self, tree, nodes, q_nodes, q_gen, w, members: int = 1) -> np.ndarray:
        """Weighted combined LM of each query value (node id and generalized
        flag) against every distinct value, plus a zero column for padding;
        the query's part counts ``members`` times (``alignment.ags``)."""
        keys = np.asarray(q_nodes, dtype=np.int64) * 2 + np.asarray(q_gen, dtype=np.int64)
        uq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        q, g = np.asarray(q_nodes)[first][:, None], np.asarray(q_gen)[first][:, None]
        cost = weighted_lm(tree, q, g, nodes[None, :], nodes[None, :] == 0, members)
        table = np.zeros((len(uq), len(nodes) + 1))
        table[:, :-1] = cost * w
        return table[inv.ravel()]

    def tables(self, x: Pairs, members: int = 1):
        """Cost tables of query ``x``, which may be a cluster's anonymized
        trajectory (footnote 6): its generalized values weigh their leaves;
        its losses count ``members`` times (``alignment.ags``)."""
        ti = self._table(self.trees.icd, self.enc.icd_nodes, x.icd, x.icd_gen, self.w_icd,
                         members)
        ta = self._table(self.trees.age, self.enc.age_nodes, x.age, x.age_gen, self.w_age,
                         members)
        sx = (lm(self.trees.icd, x.icd, x.icd_gen, 0) * self.w_icd
              + lm(self.trees.age, x.age, x.age_gen, 0) * self.w_age) * members
        return ti, ta, sx

    def query_tables(self, t: int):
        s = self.enc.span(t)
        return self.tables(Pairs.original(self.enc.icd_nodes[self.enc.icd_val[s]],
                                          self.enc.age_nodes[self.enc.age_val[s]]))


def _chunks(lengths: np.ndarray) -> list[np.ndarray]:
    """Positions of candidates grouped by length (max/min <= 2 unless small)."""
    order = np.argsort(lengths, kind="stable")
    groups, start = [], 0
    for stop in range(1, len(order) + 1):
        if stop == len(order):
            groups.append(order[start:stop])
            break
        nxt = lengths[order[stop]]
        cells = (stop - start + 1) * nxt
        if nxt > 2 * max(1, lengths[order[start]]) and cells > PAD_CELLS:
            groups.append(order[start:stop])
            start = stop
    return groups


def _padded(enc: Encoded, model: CostModel, idx: np.ndarray):
    lengths = enc.lengths[idx]
    width = int(lengths.max()) if len(idx) else 0
    cols = np.arange(width)
    mask = cols[None, :] < lengths[:, None]
    pos = np.where(mask, enc.offsets[idx][:, None] + cols[None, :], 0)
    yi = np.where(mask, enc.icd_val[pos], len(enc.icd_nodes))
    ya = np.where(mask, enc.age_val[pos], len(enc.age_nodes))
    sup = np.where(mask, model.sup_flat[pos], 0.0)
    return yi, ya, sup, lengths


def ags_costs(model: CostModel, t: int | Pairs, candidates: np.ndarray,
              members: int = 1) -> np.ndarray:
    """Total weighted A-GS cost (ILM + ALM) of trajectory ``t`` (an index, or
    an anonymized trajectory standing for ``members`` trajectories) against
    each of ``candidates`` (indices), in the order given, without the
    constant ILM(X) + ALM(X) of step 2."""
    ti, ta, sx = (model.query_tables(t) if isinstance(t, (int, np.integer))
                  else model.tables(t, members))
    out = np.empty(len(candidates))
    for pos in _chunks(model.enc.lengths[candidates]):
        yi, ya, sy, lengths = _padded(model.enc, model, candidates[pos])
        s = np.zeros((len(pos), yi.shape[1] + 1))
        np.cumsum(sy, axis=1, out=s[:, 1:])
        row = s.copy()  # row 0: suppress y_1..y_j
        for h in range(len(sx)):
            v = np.empty_like(row)
            v[:, 0] = row[:, 0] + sx[h]
            np.minimum(row[:, :-1] + ti[h][yi] + ta[h][ya], row[:, 1:] + sx[h], out=v[:, 1:])
            v -= s
            np.minimum.accumulate(v, axis=1, out=v)
            row = v + s
        out[pos] = row[np.arange(len(pos)), lengths]
    return out


def baseline_costs(model: CostModel, t: int | Pairs, candidates: np.ndarray,
                   members: int = 1) -> np.ndarray:
    """Total Baseline cost (Algorithm 2) of ``t`` (an index, or an anonymized
    trajectory) against each candidate, without ILM(X) + ALM(X).  Baseline
    has no member-weighted reading (LDAConfig refuses it): ``members`` is
    accepted for a common signature and must be 1."""
    ti, ta, sx = model.query_tables(t) if isinstance(t, (int, np.integer)) else model.tables(t)
    m = len(sx)
    sx_tail = np.concatenate([np.cumsum(sx[::-1])[::-1], [0.0]])
    out = np.empty(len(candidates))
    for pos in _chunks(model.enc.lengths[candidates]):
        yi, ya, sy, lengths = _padded(model.enc, model, candidates[pos])
        s = min(m, yi.shape[1])
        h = np.arange(s)
        gen = ti[h[None, :], yi[:, :s]] + ta[h[None, :], ya[:, :s]]
        gen = np.where(h[None, :] < lengths[:, None], gen, 0.0).sum(axis=1)
        y_tail = np.where(np.arange(yi.shape[1])[None, :] >= m, sy, 0.0).sum(axis=1)
        out[pos] = gen + y_tail + sx_tail[np.minimum(lengths, m)]
    return out
