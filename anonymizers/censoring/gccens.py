"""GCCens: Greedy Code Censoring of repeated codes under k-map (Tamersoy 2011, Chapter III,
Algorithm 1): codes capped, then censored one copy at a time until every record is k-mapped.
Readings chosen and why: docs/methods/gccens.md#censoring-gccens."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from anonymizers.censoring.config import GCCensConfig
from anonymizers.censoring.index import PopulationIndex
from anonymizers.censoring.metrics import cul, distribution, risk
from anonymizers.censoring.multisets import (
    Multisets,
    check_sample_in_population,
    encode_multisets,
)
from anonymizers.censoring.release import pseudonymize
from anonymizers.errors import ParameterError
from anonymizers.pseudonyms import generator


@dataclass(frozen=True)
class Step:
    """One censoring iteration of Algorithm 1 (steps 11-15)."""

    code: str
    records_censored: int
    cap_after: int


@dataclass(frozen=True)
class GCCensResult:
    """The release and what it cost.

    ``patients`` are the fresh pseudonyms of every released record (one per
    sample record, sorted; a record may be empty).  ``records`` is the long
    table ``patient_id, code, count`` (count >= 1) of their codes.
    ``final_caps`` maps each code of the sample (and each extra code of a cap
    mapping) to its cap when GCCens stopped.  ``cul`` and ``cul_total`` are
    aligned with ``patients`` (see docs/methods/gccens.md#censoring-gccens).  ``steps`` lists the
    censoring iterations in order.

    ``metrics``: ``k``, ``n_records``, ``n_population``; ``cul_mean``,
    ``cul_std``, ``cul_median``, ``cul_skewness`` (Tables 1-2) and the same
    for ``cul_total_*``; ``records_modified`` (share of records the loop
    censored); instance counts ``instances_original``,
    ``instances_censored_by_caps``, ``instances_censored_by_loop``,
    ``instances_released``; ``iterations`` (censoring steps) and
    ``cap_only_iterations``; for the original, capped and released records,
    ``min_dis_*``, ``uniquely_identifiable_*`` (share with dis = 1, Figure 2)
    and ``below_k_*`` (share with dis < k).
    """

    patients: np.ndarray
    records: pd.DataFrame
    final_caps: dict[str, int]
    cul: np.ndarray
    cul_total: np.ndarray
    steps: tuple[Step, ...]
    metrics: dict = field(default_factory=dict)


def gccens(sample: pd.DataFrame, population: pd.DataFrame,
           config: GCCensConfig) -> tuple[GCCensResult, pd.DataFrame]:
    """Release ``sample`` k-mapped to ``population`` (Algorithm 1).

    Both tables are long: ``patient_id, code`` with one row per occurrence, or
    with a positive integer ``count`` column.  Returns the result and,
    separately, the key ``patient_id`` (pseudonym) -> ``original_id``, which
    links the release to the source and must never be released.
    """
    S = encode_multisets(sample, "sample")
    P = encode_multisets(population, "population", vocabulary=S.codes)
    if config.k > P.n_records:
        raise ParameterError("k", f"k={config.k} exceeds the population size "
                             f"{P.n_records}: no record can be k-mapped")
    check_sample_in_population(S, P)
    caps, extra = initial_caps(config.caps, S)
    index = PopulationIndex(P.counts)
    capped = preprocess(S.counts, caps)
    Y, final, steps, cap_only, dis = censor(capped, caps, index, config.k)
    ran = bool(steps)  # the loop runs only if k-map fails, and then censors
    cap_only += sum(extra.values()) if ran else 0
    final_caps = {**{c: 0 if ran else v for c, v in extra.items()},
                  **dict(zip(S.codes.tolist(), final.tolist()))}
    sizes = (S.sizes(), _sizes(capped), _sizes(Y))
    metrics = _metrics(config.k, P.n_records, sizes, index.dis_rows(S.counts),
                       index.dis_rows(capped), dis, len(steps), cap_only)
    rng = generator(config.pseudonym_key, config.seed, np.random.default_rng(config.seed))
    patients, records, key, order = pseudonymize(Y, S.codes, S.patients, rng)
    result = GCCensResult(
        patients=patients, records=records, final_caps=dict(sorted(final_caps.items())),
        cul=cul(sizes[1], sizes[2])[order], cul_total=cul(sizes[0], sizes[2])[order],
        steps=tuple(Step(str(S.codes[o]), n, c) for o, n, c in steps), metrics=metrics)
    return result, key


def initial_caps(caps, sample: Multisets) -> tuple[np.ndarray, dict[str, int]]:
    """The cap of each sample code, and the caps of codes the sample lacks."""
    codes = sample.codes.tolist()
    if caps is None:
        return _column_max(sample.counts), {}
    if isinstance(caps, int):
        return np.full(len(codes), caps, dtype=np.int64), {}
    missing = [c for c in codes if c not in caps]
    if missing:
        raise ParameterError("caps", f"no cap for {len(missing)} code(s) of the sample, "
                             f"e.g. {missing[:5]}")
    present = set(codes)
    extra = {c: v for c, v in caps.items() if c not in present}
    return np.array([caps[c] for c in codes], dtype=np.int64), extra


def preprocess(counts: sp.csr_matrix, caps: np.ndarray) -> sp.csr_matrix:
    """Step 1: censor copies until no code appears more than its cap."""
    Y = counts.copy()
    Y.data = np.minimum(Y.data, caps[Y.indices]).astype(Y.dtype)
    Y.eliminate_zeros()
    return Y


def censor(Y: sp.csr_matrix, caps: np.ndarray, index: PopulationIndex, k: int):
    """Steps 2-16 on a preprocessed ``Y``.

    Returns (Y, caps, steps as (code index, records censored, cap after),
    number of cap-only iterations, dis of every final record).
    """
    Y, caps = Y.copy(), caps.astype(np.int64).copy()
    dis = index.dis_rows(Y)
    if (dis >= k).all():
        return Y, caps, [], 0, dis
    maxima = _column_max(Y)
    cap_only, caps = int((caps - maxima).sum()), maxima
    row_of = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
    steps = []
    while (dis < k).any():
        if not (caps >= 1).any():  # unreachable while k <= |P|
            raise RuntimeError("GCCens: every cap is 0 and k-map still fails")
        at_cap = (Y.data == caps[Y.indices]) & (Y.data > 0)
        sizes = np.bincount(Y.indices[at_cap], minlength=len(caps))
        o = int(np.argmin(np.where(caps >= 1, sizes, np.iinfo(np.int64).max)))
        hit = at_cap & (Y.indices == o)
        Y.data[hit] -= 1
        caps[o] -= 1
        steps.append((o, int(hit.sum()), int(caps[o])))
        changed = row_of[hit]
        dis[changed] = index.dis_rows(Y, changed)
    Y.eliminate_zeros()
    return Y, caps, steps, cap_only, dis


def _column_max(counts: sp.csr_matrix) -> np.ndarray:
    out = np.zeros(counts.shape[1], dtype=np.int64)
    if counts.nnz:
        np.maximum.at(out, counts.indices, counts.data)
    return out


def _sizes(counts: sp.csr_matrix) -> np.ndarray:
    return np.asarray(counts.sum(axis=1)).ravel().astype(np.int64)


def _metrics(k, n_population, sizes, dis_original, dis_capped, dis_final,
             iterations, cap_only) -> dict:
    original, capped, final = sizes
    loss, total = cul(capped, final), cul(original, final)
    m = {"k": k, "n_records": len(original), "n_population": n_population,
         **{f"cul_{s}": v for s, v in distribution(loss).items()},
         **{f"cul_total_{s}": v for s, v in distribution(total).items()},
         "records_modified": float((loss > 0).mean()) if len(loss) else 0.0,
         "instances_original": int(original.sum()),
         "instances_censored_by_caps": int((original - capped).sum()),
         "instances_censored_by_loop": int((capped - final).sum()),
         "instances_released": int(final.sum()),
         "iterations": iterations, "cap_only_iterations": cap_only}
    for name, dis in (("original", dis_original), ("capped", dis_capped),
                      ("released", dis_final)):
        m.update({f"{key}_{name}": v for key, v in risk(dis, k).items()})
    return m
