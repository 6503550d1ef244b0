"""The HHP lattice search split into parts (anonymizers/claims/partition.py)
and the staged release on disk (store.py): the release must not depend on
how the parts are grouped into tasks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_claims_lattice import make_lattice
from test_claims_release import FAST, synthetic

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.claims.lattice import search
from anonymizers.claims.partition import best_of, group, n_parts, search_part, split_qi, sub_lattice
from anonymizers.claims.release import finish, part_count, search_parts, stage
from anonymizers.claims.risk import NodeRisk
from anonymizers.claims.store import load_staged, save_staged
from anonymizers.errors import ParameterError


def _monotone(lat, rng, n_min):
    minimal = lat.nodes[rng.choice(len(lat.nodes), size=min(n_min, len(lat.nodes)),
                                   replace=False)]
    ok = lambda node: bool((np.asarray(node) >= minimal).all(axis=1).any())
    return lambda node: NodeRisk(node, 0.0 if ok(node) else 1.0, 0.0, 1, ok(node), 0, 0.0, 0.0)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(0, 10_000),
       st.integers(1, 4))
def test_parts_tile_the_lattice_and_find_the_single_search_node(sizes, seed, n_min):
    rng = np.random.default_rng(seed)
    lat = make_lattice(sizes, rng)
    evaluate = _monotone(lat, rng, n_min)
    j = split_qi(lat)
    lifted = []
    for p in range(n_parts(lat)):
        sub = sub_lattice(lat, p)
        assert (sub.nodes[:, j] == 0).all()
        full = sub.nodes.copy()
        full[:, j] = p
        lifted += [lat.index(tuple(n)) for n in full]
        assert np.array_equal(sub.loss, lat.loss[[lat.index(tuple(n)) for n in full]])
    assert sorted(lifted) == list(range(len(lat.nodes)))            # a partition
    parts = [search_part(lat, p, evaluate, 10_000) for p in range(n_parts(lat))]
    assert all(r.chosen is None or r.chosen.node[j] == r.part for r in parts)
    whole = search(lat, evaluate, 10_000).chosen
    assert best_of(lat, parts).node == whole.node                  # the same node, any lattice


def test_no_part_has_a_candidate_when_the_top_fails():
    lat = make_lattice([2, 3, 4], np.random.default_rng(0))
    fail = lambda n: NodeRisk(n, 1.0, 0.0, 1, False, 0, 0.0, 0.0)
    parts = [search_part(lat, p, fail, 100) for p in range(n_parts(lat))]
    assert best_of(lat, parts) is None and all(len(r.evaluated) == 1 for r in parts)


def test_grouping_and_bad_parts():
    assert group(5, 2) == [[0, 1], [2, 3], [4]] and group(5, 9) == [[0, 1, 2, 3, 4]]
    assert group(0, 3) == []
    with pytest.raises(ParameterError, match="lattice_parts_per_task"):
        group(5, 0)
    with pytest.raises(ParameterError, match="part"):
        sub_lattice(make_lattice([2, 3], np.random.default_rng(0)), 7)


@pytest.fixture(scope="module")
def data():
    return synthetic(n_members=80, seed=3)


@pytest.fixture(scope="module")
def config():
    return HHPConfig(seed=5, **FAST)


def _same(a, b):
    pd.testing.assert_frame_equal(a.members, b.members)
    pd.testing.assert_frame_equal(a.claims, b.claims)
    pd.testing.assert_frame_equal(a.key, b.key)
    assert a.metrics["chosen_node"] == b.metrics["chosen_node"]
    assert [n.node for n in a.lattice] == [n.node for n in b.lattice]


def test_release_does_not_depend_on_the_grouping_of_parts(data, config, tmp_path):
    whole = hhp_release(data, config)
    staged = stage(data, config)
    save_staged(staged, tmp_path / "staged.npz")
    n = part_count(staged, config)
    assert n == whole.metrics["lattice_parts"] == 5
    for per_task in (1, 2, n):
        results = []
        for parts in reversed(group(n, per_task)):  # tasks finish in any order
            results += search_parts(load_staged(tmp_path / "staged.npz"), config, parts)
        _same(finish(load_staged(tmp_path / "staged.npz"), config, results, 0.0), whole)


def test_stage_takes_a_reader_of_the_claims(data, config, tmp_path):
    """A function returning the frame (so that the raw frame can be dropped once
    normalized) stages exactly what the frame itself does."""
    calls = []
    save_staged(stage(data, config), tmp_path / "a.npz")
    save_staged(stage(lambda: calls.append(1) or data.copy(), config), tmp_path / "b.npz")
    assert calls == [1]
    a, b = np.load(tmp_path / "a.npz", allow_pickle=True), np.load(tmp_path / "b.npz",
                                                                    allow_pickle=True)
    assert sorted(a.files) == sorted(b.files)
    for name in a.files:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_finish_refuses_missing_or_repeated_parts(data, config):
    staged = stage(data, config)
    results = search_parts(staged, config, [0, 1, 2, 3, 4])
    for bad in (results[:4], results + results[:1]):
        with pytest.raises(ParameterError, match="parts"):
            finish(staged, config, bad, 0.0)


def test_a_named_node_is_one_part(data, config):
    fixed = replace(config, node={"dsfc": "years"})
    staged = stage(data, fixed)
    assert part_count(staged, fixed) == 1
    _same(finish(staged, fixed, search_parts(staged, fixed, [0]), 0.0),
          hhp_release(data, fixed))


def test_staged_release_round_trips_exactly(data, config, tmp_path):
    staged = stage(data, config)
    odd = np.array(["id\x00", "é\u2028x", " lead", "", "\ud800"] +
                   list(staged.prep.member_ids[5:]), dtype=object)
    staged = replace(staged, prep=replace(staged.prep, member_ids=odd))
    save_staged(staged, tmp_path / "s.npz")
    back = load_staged(tmp_path / "s.npz")
    assert back.seed == staged.seed and back.policy == staged.policy
    assert back.report == staged.report
    a, b = staged.prep, back.prep
    assert list(b.member_ids) == list(a.member_ids) and b.member_ids.dtype == object
    for name in ("member", "starts", "n_claims", "dsfc", "rows"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert (a.threshold, a.absent, a.fallback) == (b.threshold, b.absent, b.fallback)
    for qa, qb in zip(a.qis, b.qis, strict=True):
        assert (qa.name, qa.scope, qa.level_names) == (qb.name, qb.scope, qb.level_names)
        assert np.array_equal(qa.code0, qb.code0)
        assert all(np.array_equal(x, y) for x, y in zip(qa.maps, qb.maps, strict=True))
        assert all(list(x) == list(y) for x, y in zip(qa.labels, qb.labels, strict=True))
