"""``linking.greedy_assignment``: the assignment association linking uses where scipy's exact
one is out of reach (large joint clusters; docs/methods/disassociation.md#disassociation-linking)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from anonymizers.disassociation import linking
from anonymizers.disassociation import reconstruct as R
from anonymizers.disassociation.release import (
    Cluster,
    Disassociated,
    RecordChunk,
    SharedChunk,
)


def _classes(members: list[list[int]], n_codes: int) -> sp.csc_matrix:
    rows = [c for m in members for c in m]
    cols = [j for j, m in enumerate(members) for _ in m]
    return sp.csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_codes, len(members)))


@st.composite
def problems(draw):
    n = draw(st.integers(1, 40))
    n_codes = draw(st.integers(1, 5))
    n_classes = draw(st.integers(1, 6))
    members = [draw(st.lists(st.integers(0, n_codes - 1), min_size=1, max_size=n_codes,
                             unique=True)) for _ in range(n_classes)]
    demand = np.array(draw(st.lists(st.integers(0, n), min_size=n_classes,
                                    max_size=n_classes)), dtype=np.int64)
    while demand.sum() > n:  # the caller never asks for more subrecords than records
        demand[int(np.argmax(demand))] -= 1
    u = np.array(draw(st.lists(st.sampled_from([0.0, 0.0, -0.7, 0.29, 1.5, 3.0]),
                               min_size=n * n_codes, max_size=n * n_codes))).reshape(n, n_codes)
    held = np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)))
    return u, _classes(members, n_codes), demand, held, np.array([len(m) for m in members])


@settings(max_examples=150, deadline=None)
@given(problems(), st.integers(0, 2**16), st.integers(0, 3))
def test_each_class_gets_its_count_of_distinct_records(problem, seed, candidates):
    u, classes, demand, held, lengths = problem
    old = linking.CANDIDATES
    linking.CANDIDATES = candidates  # few candidates: the fall-back pass does the rest
    try:
        got = linking.greedy_assignment(u, classes, demand, held, lengths,
                                        np.random.default_rng(seed))
    finally:
        linking.CANDIDATES = old
    assert [len(g) for g in got] == demand.tolist()
    every = np.concatenate(got)
    assert len(set(every.tolist())) == len(every)
    assert ((every >= 0) & (every < u.shape[0])).all()


def _total(u, classes, got) -> float:
    scores = np.asarray((classes.T @ u.T).T)
    return float(sum(scores[g, s].sum() for s, g in enumerate(got)))


def _exact_total(u, classes, demand) -> float:
    scores = np.asarray((classes.T @ u.T).T)
    columns = np.repeat(np.arange(len(demand)), demand)
    r, c = linear_sum_assignment(-scores[:, columns])
    return float(scores[r, columns[c]].sum())


def test_one_class_takes_its_best_records():
    """Alone, a class of equal subrecords takes the records it scores best:
    the exact optimum."""
    rng = np.random.default_rng(5)
    u = rng.choice([0.0, 0.3, 0.9, 2.0], size=(500, 3))
    classes = _classes([[0, 2]], 3)
    got = linking.greedy_assignment(u, classes, np.array([120]), np.zeros(500, dtype=int),
                                    np.array([2]), rng)
    assert _total(u, classes, got) == pytest.approx(_exact_total(u, classes, np.array([120])))


def test_classes_that_prefer_other_records_get_the_optimum():
    """Classes whose best records differ (the usual shape: each code's own
    associated records) are placed as the exact assignment places them,
    also when a class's best records are more than its candidates."""
    n = 300
    u = np.zeros((n, 3))
    u[:100, 0], u[100:200, 1], u[200:, 2] = 2.0, 1.0, 0.5
    u[150:, 0] = 1.5  # class 0 also scores well where class 1 and 2 do best
    classes = _classes([[0], [1], [2]], 3)
    demand = np.array([130, 90, 60])
    got = linking.greedy_assignment(u, classes, demand, np.zeros(n, dtype=int),
                                    np.ones(3, dtype=int), np.random.default_rng(1))
    assert _total(u, classes, got) == pytest.approx(_exact_total(u, classes, demand))


def test_ties_weigh_records_by_the_codes_they_hold():
    """As ``best_assignment``: no association known, a class of 3-code
    subrecords goes to the record holding 9 codes nearly always."""
    held = np.array([0, 0, 9])
    classes = _classes([[0, 1, 2]], 3)
    picks = [int(linking.greedy_assignment(np.zeros((3, 3)), classes, np.array([1]), held,
                                           np.array([3]), np.random.default_rng(s))[0][0])
             for s in range(200)]
    assert Counter(picks)[2] >= 195


def test_a_class_left_to_the_fall_back_weighs_records_by_the_codes_they_hold(monkeypatch):
    """Two classes want the same best record; the one that loses it takes,
    among the rest, the record holding 9 codes nearly always."""
    monkeypatch.setattr(linking, "CANDIDATES", 0)
    u = np.array([[2.0], [0.0], [0.0], [0.0]])
    classes = _classes([[0], [0]], 1)
    held = np.array([0, 0, 0, 9])
    second = []
    for s in range(200):
        got = linking.greedy_assignment(u, classes, np.array([1, 1]), held, np.array([3, 3]),
                                        np.random.default_rng(s))
        assert min(int(g[0]) for g in got) == 0  # one class keeps the best record
        second.append(max(int(g[0]) for g in got))
    assert Counter(second)[3] >= 195


def _joint(shared_codes: list[tuple[str, ...]]) -> Disassociated:
    """Cluster 0 shows 'z' with 'w' (and 'a' with 'b'); clusters 1 and 2 form a
    joint cluster whose shared chunks are ``shared_codes``, in that order."""
    learn = Cluster(4, (RecordChunk(("a", "b", "w", "z"),
                                    (("w", "z"), ("w", "z"), ("a", "b"), ("a", "b"))),), ())
    one = Cluster(4, (RecordChunk(("c",), (("c",), ("c",), (), ())),), ())
    two = Cluster(4, (RecordChunk(("d",), (("d",), ("d",), (), ())),), ())
    shared = tuple(SharedChunk((1, 2), codes, subrecords)
                   for codes, subrecords in shared_codes)
    return Disassociated(2, 2, (learn, one, two), shared)


@pytest.mark.parametrize("exact_work", [np.inf, -1.0])
def test_each_shared_chunk_reads_the_codes_placed_before_it(monkeypatch, exact_work):
    """The joint cluster's codes matrix is brought up to date between its
    shared chunks: the context each one reads equals a rebuild from every
    pair placed so far (the second chunk's 'w' must see where 'z' went)."""
    monkeypatch.setattr(linking, "EXACT_WORK", exact_work)
    release = _joint([(("z",), (("z",), ("z",)) + ((),) * 6),
                      (("w",), (("w",), ("w",)) + ((),) * 6),
                      (("a", "b"), (("a", "b"), ("b",), ("a",)) + ((),) * 5)])
    reads = []
    original = R._Placed.context

    def checked(self, records, weights, since, joint=None):
        out = original(self, records, weights, since, joint)
        if joint is not None:
            row = {int(r): i for i, r in enumerate(records)}
            held = np.zeros((len(records), len(self.vocab)))
            for r, c in zip(np.concatenate(self.rec), np.concatenate(self.code)):
                if int(r) in row:
                    held[row[int(r)], c] += 1
            dense = weights.toarray() if sp.issparse(weights) else np.asarray(weights)
            np.testing.assert_allclose(out, held @ dense)
            reads.append(float(np.abs(out).sum()))
        return out

    monkeypatch.setattr(R._Placed, "context", checked)
    for seed in range(5):
        drawn = R.reconstruct(release, seed=seed)
        holders = drawn.groupby("patient_id")["code"].apply(set)
        assert sum({"z", "w"} <= h for h in holders) >= 2 + 2  # cluster 0's two, and the joint's
    assert len(reads) == 15 and max(reads) > 0


def test_greedy_places_each_class_on_the_records_it_was_given(monkeypatch):
    """Subrecords of two classes interleaved (a, b, a, b): the records
    greedy_assignment returns for a class get that class's codes."""
    monkeypatch.setattr(linking, "EXACT_WORK", -1.0)
    release = _joint([(("x", "y"), (("x",), ("y",), ("x",), ("y",)) + ((),) * 4)])
    monkeypatch.setattr(linking, "greedy_assignment",
                        lambda *a, **k: [np.array([7, 1]), np.array([0, 4])])
    added = []
    original = R._Placed.add

    def spy(self, rows, codes, indexed=False):
        added.append((np.asarray(rows).tolist(), list(codes), indexed))
        return original(self, rows, codes, indexed)

    monkeypatch.setattr(R._Placed, "add", spy)
    R.reconstruct(release, seed=0)
    members = list(range(4, 12))  # clusters 1 and 2: records 4..11
    rows, codes, _ = added[-1]
    assert sorted(zip(codes, rows)) == sorted([("x", members[7]), ("x", members[1]),
                                               ("y", members[0]), ("y", members[4])])
