"""Lattice search and information loss (El Emam et al. 2012, appendix
section 5; docs/methods/hhp.md, the section on ``anonymizers.claims.lattice``)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from anonymizers.claims.groupings import load_hierarchies
from anonymizers.claims.inputs import normalize
from anonymizers.claims.lattice import Lattice, build_lattice, search
from anonymizers.claims.recoding import prepare
from anonymizers.claims.risk import NodeRisk
from anonymizers.errors import InputError


def make_lattice(sizes, rng) -> Lattice:
    qi_loss = []
    for s in sizes:
        steps = np.sort(rng.random(s - 1)) if s > 1 else np.array([])
        qi_loss.append(np.r_[0.0, steps[:-1], 1.0] if s > 1 else np.zeros(1))
    nodes = np.array(list(itertools.product(*[range(s) for s in sizes])), dtype=np.int64)
    loss = np.mean([qi_loss[j][nodes[:, j]] for j in range(len(sizes))], axis=0)
    return Lattice(tuple(f"q{j}" for j in range(len(sizes))),
                   tuple(tuple(f"l{i}" for i in range(s)) for s in sizes), nodes, loss,
                   tuple(qi_loss))


@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(0, 10_000),
       st.integers(1, 4))
def test_search_finds_the_least_loss_candidate_of_a_monotone_lattice(sizes, seed, n_min):
    rng = np.random.default_rng(seed)
    lat = make_lattice(sizes, rng)
    minimal = lat.nodes[rng.choice(len(lat.nodes), size=min(n_min, len(lat.nodes)),
                                   replace=False)]
    candidate = lambda node: bool((np.asarray(node) >= minimal).all(axis=1).any())
    seen = []

    def evaluate(node):
        seen.append(node)
        return NodeRisk(node, 0.0 if candidate(node) else 1.0, 0.0, 1, candidate(node), 0,
                        0.0, 0.0)

    res = search(lat, evaluate, max_evaluations=10_000)
    cands = [i for i in range(len(lat.nodes)) if candidate(tuple(lat.nodes[i]))]
    assert res.complete and res.chosen.candidate
    assert lat.loss[lat.index(res.chosen.node)] == min(lat.loss[cands])
    assert len(seen) == len(set(seen))                          # no node twice
    failed = [n for n in seen if not candidate(n)]
    for i, node in enumerate(seen):  # pruning: nothing is evaluated below an earlier failure
        assert not any(all(x <= y for x, y in zip(node, f)) for f in failed
                       if seen.index(f) < i)


def test_no_candidate_when_the_top_fails():
    lat = make_lattice([2, 3], np.random.default_rng(0))
    res = search(lat, lambda n: NodeRisk(n, 1.0, 0.0, 1, False, 0, 0.0, 0.0), 100)
    assert res.chosen is None and len(res.evaluated) == 1


def test_budget_stops_the_search_and_keeps_a_candidate():
    lat = make_lattice([4, 4, 4, 4], np.random.default_rng(1))
    ok = lambda n: sum(n) >= 6
    res = search(lat, lambda n: NodeRisk(n, 0.0, 0.0, 1, ok(n), 0, 0.0, 0.0), 5)
    assert len(res.evaluated) == 5 and not res.complete and res.chosen.candidate


def test_information_loss_is_monotone_and_normalized():
    rng = np.random.default_rng(3)
    rows = [{"member_id": f"M{m}", "claim_id": f"{m}-{c}",
             "service_date": np.datetime64("2009-01-01") + int(rng.integers(0, 900)),
             "age_at_service": int(rng.integers(0, 99)), "sex": str(m % 2 + 1),
             "dx_code": str(rng.choice(["4100", "5990", "4280", "2500"])),
             "length_of_stay": int(rng.integers(0, 30))}
            for m in range(80) for c in range(1 + m % 4)]
    norm, present = normalize(pd.DataFrame(rows))
    lat = build_lattice(prepare(norm, present, load_hierarchies()))
    assert lat.loss[0] == 0.0 and lat.loss[-1] == 1.0
    for i in range(len(lat.nodes)):
        for j in range(len(lat.names)):
            node = lat.nodes[i].copy()
            if node[j] + 1 < len(lat.level_names[j]):
                node[j] += 1
                assert lat.loss[lat.index(tuple(node))] >= lat.loss[i]


@pytest.mark.parametrize("column, value", [("age_at_service", "-37"), ("age_at_service", "7.5"),
                                           ("sex", "Q")])
def test_normalize_names_row_and_field_but_not_a_bad_value(column, value):
    """The library's own check (the DAG's path, not only the CLI's): a member's
    age or sex is patient data, so the error names where, not what."""
    df = pd.DataFrame({"member_id": ["m1", "m2"], "claim_id": ["c1", "c2"],
                       "service_date": ["2009-01-02", "2009-03-04"],
                       "age_at_service": ["70", "71"], "sex": ["F", "M"],
                       "dx_code": ["4019", "25000"]})
    df.loc[1, column] = value
    with pytest.raises(InputError) as err:
        normalize(df, "claims.csv")
    assert err.value.row == 2 and err.value.field == column
    assert value not in str(err.value)
