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
