"""refine.py without the dense n x clusters price table gives the releases
the dense table gave: ``_dense_round`` is the implementation it replaced
(kept here as the reference), run against the current one on random cohorts
and on a generated D_50-like cohort."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal import refine as refine_mod
from anonymizers.longitudinal.framework import NothingToRelease
from tests.anonymizers.test_longitudinal_refine import cohort, frame


def _dense_round(clusters, k, grow, from_cluster, loss) -> bool:
    """refine._round as it was, with ``inc`` the full n x clusters table."""
    n = sum(len(c.members) for c in clusters)
    where = np.empty(n, dtype=np.int64)
    for ci, c in enumerate(clusters):
        where[c.members] = ci
    inc = np.column_stack([from_cluster(c.trajectory, np.arange(n), len(c.members))
                           for c in clusters])
    share = np.empty(n)
    for c in clusters:
        for t in c.members:
            rest = [int(u) for u in c.members if u != t]
            share[t] = refine_mod._cost(c) - refine_mod._cost(refine_mod._regrow(rest, grow))
    out = []
    for t in range(n):
        a = where[t]
        near = [b for b in np.argsort(inc[t], kind="stable") if b != a][:refine_mod.N_NEAREST]
        for b in near:
            movable = len(clusters[a].members) > k and len(clusters[b].members) < 2 * k - 1
            if movable and share[t] > inc[t, b]:
                out.append((share[t] - inc[t, b], t, None, b))
            for u in clusters[b].members:
                est = share[t] + share[u] - inc[t, b] - inc[u, a]
                if est > 0:
                    out.append((est, t, int(u), b))
    out.sort(key=lambda c: -c[0])
    touched, kept = set(), False
    for _, t, u, b in out:
        a = where[t]
        if a in touched or b in touched:
            continue
        new_a = [int(x) for x in clusters[a].members if x != t] + ([u] if u is not None else [])
        new_b = [int(x) for x in clusters[b].members if x != u] + [t]
        ca, cb = refine_mod._regrow(new_a, grow), refine_mod._regrow(new_b, grow)
        if loss(ca) + loss(cb) < loss(clusters[a]) + loss(clusters[b]) - 1e-12:
            clusters[a], clusters[b] = ca, cb
            touched |= {a, b}
            kept = True
    return kept


def _both(df, config, monkeypatch):
    """(current, dense reference) results, or None when LDA refuses."""
    try:
        now = lda(df, config)
    except NothingToRelease:
        now = None
    with monkeypatch.context() as m:
        m.setattr(refine_mod, "_round", _dense_round)
        try:
            ref = lda(df, config)
        except NothingToRelease:
            ref = None
    return now, ref


def _assert_same(now, ref):
    assert (now is None) == (ref is None)
    if now is None:
        return
    pd.testing.assert_frame_equal(now.records, ref.records)
    pd.testing.assert_frame_equal(now.pseudonym_map, ref.pseudonym_map)
    # n_alignments counts refine's on-demand inc[u, A] alignments too, the
    # rest of the figures are the release's
    skip = {"n_alignments"}
    assert {k: v for k, v in now.metrics.items() if k not in skip} == \
        {k: v for k, v in ref.metrics.items() if k not in skip}


@settings(max_examples=40, deadline=None)
@given(cohort, st.integers(2, 4), st.booleans(), st.sampled_from([0.5, 0.2, 0.9]),
       st.integers(1, 3), st.integers(0, 3))
def test_same_release_as_the_dense_table_ags(trajectories, k, weighted, w_icd, rounds, seed):
    if len(trajectories) < k:
        return
    config = LDAConfig(k=k, seed=seed, w_icd=w_icd, w_age=1 - w_icd,
                       member_weighted=weighted, refine_rounds=rounds)
    with pytest.MonkeyPatch.context() as mp:
        _assert_same(*_both(frame(trajectories), config, mp))


@settings(max_examples=25, deadline=None)
@given(cohort, st.integers(2, 3), st.integers(1, 2), st.integers(0, 3))
def test_same_release_as_the_dense_table_baseline(trajectories, k, rounds, seed):
    if len(trajectories) < k:
        return
    config = LDAConfig(k=k, seed=seed, alignment="baseline", refine_rounds=rounds)
    with pytest.MonkeyPatch.context() as mp:
        _assert_same(*_both(frame(trajectories), config, mp))


def test_same_release_on_a_generated_cohort(monkeypatch):
    """300 D_50-like trajectories (benchmarks/bench_lda.py's generator), the
    release file's deviations, two rounds: more clusters than ``BLOCK`` so
    the running best is merged across blocks."""
    from benchmarks.bench_lda import d50_synthetic

    df = d50_synthetic(300, 360).drop(columns="service_date")
    config = LDAConfig(k=5, seed=2011, member_weighted=True, refine_rounds=2)
    now, ref = _both(df, config, monkeypatch)
    assert now.metrics["n_clusters"] > refine_mod.BLOCK
    _assert_same(now, ref)
