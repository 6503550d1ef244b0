"""Which consistent reconstruction to draw (Loukides et al. 2014, Section 3.2, Fig. 5; used by
``reconstruct``): subrecords and item codes linked by the associations the release itself shows.
Readings chosen and why: docs/methods/disassociation.md#disassociation-linking."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from anonymizers.disassociation.release import Disassociated

TIE_BREAK = 1e-6  # well below any association step (log(2/1.5) ~ 0.29)


def vocabulary(release: Disassociated) -> dict[str, int]:
    codes: set[str] = set()
    for c in release.clusters:
        codes.update(c.item_chunk)
        for ch in c.record_chunks:
            codes.update(ch.codes)
    for s in release.shared_chunks:
        codes.update(s.codes)
    return {c: i for i, c in enumerate(sorted(codes))}


def _chunks(release: Disassociated):
    for c in release.clusters:
        for ch in c.record_chunks:
            yield ch.subrecords
    for s in release.shared_chunks:
        yield s.subrecords


def association(release: Disassociated, vocab: dict[str, int]) -> sp.csr_matrix:
    """Codes x codes log-ratio of observed to expected co-occurrence within
    the release's chunks (see docs/methods/disassociation.md#disassociation-linking);
    zero where unknown."""
    rows, cols, chunk_of = [], [], []
    for ci, subrecords in enumerate(_chunks(release)):
        base = len(chunk_of)
        for j, s in enumerate(subrecords):
            rows.extend([base + j] * len(s))
            cols.extend(vocab[c] for c in s)
        chunk_of.extend([ci] * len(subrecords))
    v = len(vocab)
    chunk_of = np.asarray(chunk_of, dtype=np.int64)
    x = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(chunk_of), v))
    observed = (x.T @ x).tocsr()
    counts = sp.csr_matrix((np.ones(len(rows)), (chunk_of[rows] if rows else [], cols)),
                           shape=(int(chunk_of.max(initial=-1)) + 1, v))
    sizes = np.bincount(chunk_of, minlength=counts.shape[0]).astype(float)
    expected = (counts.T @ sp.diags(1 / np.maximum(sizes, 1)) @ counts).tocsr()
    # log((o + 1) / (e + 1)) where a chunk holds both codes (observed's
    # pattern lies in expected's), zero elsewhere
    ones = (expected != 0).astype(float)
    inverse = (expected + ones).tocsr()
    inverse.data = 1 / inverse.data
    out = (observed + ones).multiply(inverse).tocsr()
    out.data = np.log(out.data)
    out.setdiag(0)
    out.eliminate_zeros()
    return out


def urn(records: np.ndarray, held: np.ndarray, context: np.ndarray, counts: np.ndarray,
        items: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Item codes onto a cluster's records: in a random order, each code goes
    to ``counts`` distinct records among those most associated with it
    (``context``, records x codes; all records when nothing is known), drawn
    by a Polya urn, with probability proportional to the codes a record
    holds (``held``, then those it got here) plus one.  Returns the (record,
    code) pairs."""
    weight = held.astype(float) + 1
    rows, cols = [], []
    for j in rng.permutation(len(items)):
        n = int(min(counts[j], len(records)))
        score = context[:, j]
        chosen = np.zeros(0, dtype=np.int64)
        for level in np.unique(score)[::-1]:  # best-associated records first
            if len(chosen) == n:
                break
            pool = np.flatnonzero(score == level)
            w = weight[pool]
            take = min(n - len(chosen), len(pool))
            chosen = np.r_[chosen, pool[rng.choice(len(pool), size=take, replace=False,
                                                   p=w / w.sum())]]
        weight[chosen] += 1
        rows.append(records[chosen])
        cols.append(np.full(n, items[j], dtype=np.int64))
    return np.concatenate(rows), np.concatenate(cols)


def best_records(context: np.ndarray, rng: np.random.Generator, count: int = 1,
                 noise: float = TIE_BREAK) -> np.ndarray:
    """Per column of ``context`` (records x codes scores), the ``count`` best
    records (rows of the result), ties broken at random: uniform noise of
    ``noise`` (``TIE_BREAK``; 1 on all-zero scores draws records uniformly)."""
    noisy = context + rng.random(context.shape) * noise
    return np.argsort(-noisy, axis=0, kind="stable")[:count]


def best_assignment(context: np.ndarray, rng: np.random.Generator,
                    held: np.ndarray | None = None,
                    lengths: np.ndarray | None = None) -> np.ndarray:
    """Distinct records (rows of ``context``, records x subrecords) for the
    subrecords, maximising their summed score, ties broken at random.

    With ``held`` (codes each record holds) and ``lengths`` (codes of each
    subrecord), ties are broken as the item codes' Polya urn would draw:
    a subrecord of ``L`` codes weighs ``(held + 1) ** L`` on a record, one
    urn weight per code, and the tie-break is its log plus Gumbel noise
    (the Gumbel-max trick: alone, it draws in proportion to the weight),
    all scaled by ``TIE_BREAK`` so that association still decides."""
    if held is None or lengths is None:
        noisy = context + rng.random(context.shape) * TIE_BREAK
    else:
        prior = np.log1p(held.astype(float))[:, None] * np.asarray(lengths)[None, :]
        noisy = context + (prior + rng.gumbel(size=context.shape)) * TIE_BREAK
    sub, rec = linear_sum_assignment(-noisy.T)
    out = np.empty(context.shape[1], dtype=np.int64)
    out[sub] = rec
    return out


# scipy's exact assignment of m subrecords to n records costs about m * m * n steps.  One
# refine window over a generated 113,000-member release makes joint clusters of 17,000
# records and about 7,700 shared chunks (one of 16,783 subrecords: 5e12 steps); solved
# exactly down to 1e7 steps each, they still took most of a 185 s reconstruction.  Above
# this the assignment is ``greedy_assignment``'s (MEPS 2005, k = 5, one window, 12 draws:
# sections within 2.5% 81.3% against 82.1% all exact; benchmarks/disassociation.md).
EXACT_WORK = 1e6
CANDIDATES = 16  # records each class of equal subrecords considers beyond its count
BLOCK_ENTRIES = 1 << 22  # scores held at once by ``greedy_assignment`` (32 MB)


def exact_feasible(n_records: int, n_subrecords: int) -> bool:
    return float(n_subrecords) ** 2 * n_records <= EXACT_WORK


def greedy_assignment(u: np.ndarray, classes: sp.csc_matrix, demand: np.ndarray,
                      held: np.ndarray, lengths: np.ndarray,
                      rng: np.random.Generator) -> list[np.ndarray]:
    """Distinct records for ``demand[s]`` copies of each class ``s`` of equal
    subrecords, where a copy of ``s`` on record ``r`` scores
    ``(u @ classes)[r, s]`` (``u``: records x codes, the association of each
    record's codes with each code; ``classes``: codes x classes, 0/1) plus
    ``best_assignment``'s tie-break.  Greedy on the heaviest candidate edges
    (each class's ``demand + CANDIDATES`` best records), then each class still
    short takes its best free records.  Returns each class's records."""
    n = u.shape[0]
    r_all, s_all, v_all = [], [], []
    for cols, score in _class_scores(u, classes, held, lengths, rng, np.arange(n)):
        take = np.minimum(demand[cols] + CANDIDATES, n)
        top = _top_rows(score, int(take.max()))
        vals = np.take_along_axis(score, top, axis=0)
        keep = np.arange(top.shape[0])[:, None] < take[None, :]
        r_all.append(top[keep])
        s_all.append(np.broadcast_to(cols, top.shape)[keep])
        v_all.append(vals[keep])
    rows, cls, vals = (np.concatenate(x) for x in (r_all, s_all, v_all))
    free = np.ones(n, dtype=bool)
    need = demand.astype(np.int64).copy()
    chosen: list[list[int]] = [[] for _ in range(len(demand))]
    left = int(need.sum())
    for e in np.argsort(-vals, kind="stable"):
        if not left:
            break
        r, s = rows[e], cls[e]
        if free[r] and need[s]:
            free[r] = False
            need[s] -= 1
            left -= 1
            chosen[s].append(int(r))
    for s in np.flatnonzero(need):  # its candidates went to other classes (own noise drawn)
        pool = np.flatnonzero(free)
        (_, score), = _class_scores(u, classes[:, [s]], held, lengths[[s]], rng, pool)
        best = pool[_top_rows(score, int(need[s]))[:, 0]]
        free[best] = False
        chosen[s].extend(best.tolist())
    return [np.asarray(c, dtype=np.int64) for c in chosen]


def _class_scores(u, classes, held, lengths, rng, rows):
    """Blocks ``(columns, scores)`` of ``rows`` x classes, tie-broken as in
    ``best_assignment`` (Gumbel noise per record and class)."""
    prior = np.log1p(held[rows].astype(float))[:, None]
    width = max(1, BLOCK_ENTRIES // max(len(rows), 1))
    sub = u[rows]
    for start in range(0, classes.shape[1], width):
        cols = np.arange(start, min(start + width, classes.shape[1]))
        score = np.asarray((classes[:, cols].T @ sub.T).T)
        score += (prior * lengths[cols][None, :] + rng.gumbel(size=score.shape)) * TIE_BREAK
        yield cols, score


def _top_rows(score: np.ndarray, count: int) -> np.ndarray:
    """Per column, the rows of the ``count`` highest scores, best first."""
    count = min(count, score.shape[0])
    if count < score.shape[0]:
        top = np.argpartition(-score, count - 1, axis=0)[:count]
    else:
        top = np.broadcast_to(np.arange(score.shape[0])[:, None], score.shape).copy()
    order = np.argsort(-np.take_along_axis(score, top, axis=0), axis=0, kind="stable")
    return np.take_along_axis(top, order, axis=0)
