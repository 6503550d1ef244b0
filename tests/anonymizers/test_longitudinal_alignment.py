"""A-GS and Baseline (Tamersoy 2011, Section IV.3.1, Algorithms 2-3,
Example 5, Figure 7), the batched costs against the exact algorithm, and the
vectorised A-GS against a cell-by-cell transcription of Algorithm 3."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.hierarchy import from_parent_map, icd9cm
from anonymizers.longitudinal.alignment import DIAG, LEFT, UP, Pairs, Trees, ags, baseline
from anonymizers.longitudinal.batch import CostModel, Encoded, ags_costs, baseline_costs
from anonymizers.longitudinal.hierarchies import age_hierarchy, encode_tree
from anonymizers.longitudinal.loss import combined_lm, lm

# Figure 6 (hypertension subtree): 401 is the root, with the leaves 401.0, 401.1, 401.9
FIG6 = from_parent_map({"401.0": "*", "401.1": "*", "401.9": "*"})
FIG5 = age_hierarchy(33, 40)
D, L, U = DIAG, LEFT, UP


def encode(trajectories, icd_h=FIG6, age_h=FIG5):
    codes = [c for t in trajectories for c, _ in t]
    ages = [str(a) for t in trajectories for _, a in t]
    icd_tree, icd, _ = encode_tree(icd_h, codes)
    age_tree, age, _ = encode_tree(age_h, ages)
    out, at = [], 0
    for t in trajectories:
        out.append(Pairs.original(icd[at:at + len(t)], age[at:at + len(t)]))
        at += len(t)
    return Trees(icd_tree, age_tree), out


def labels(trees, pairs):
    return list(zip(trees.icd.label_of(pairs.icd), trees.age.label_of(pairs.age)))


T1 = [("401.1", 33), ("401.1", 34), ("401.1", 35)]
T4 = [("401.9", 33), ("401.1", 33), ("401.1", 34), ("401.1", 35)]


def test_figure_7_matrices_and_example_5():
    trees, (t1, t4) = encode([T1, T4])
    res = ags(t4, t1, trees, 0.5, 0.5)  # rows: T4, columns: T1
    assert res.i.tolist() == [[0, 0.5, 1, 1.5], [0.5, 1, 1.5, 2], [1, 0.5, 1, 1.5],
                              [1.5, 1, 0.5, 1], [2, 1.5, 1, 0.5]]
    assert res.a.tolist() == [[0, 0.5, 1, 1.5], [0.5, 0, 0.5, 1], [1, 0.5, 0.25, 0.75],
                              [1.5, 1, 0.5, 0.75], [2, 1.5, 1, 0.5]]
    assert res.r[1:, :].tolist() == [[U, D, L, L], [U, D, D, L], [U, U, D, D], [U, U, U, D]]
    assert res.r[0, 1:].tolist() == [L, L, L]
    assert labels(trees, res.trajectory) == [("401.1", "33"), ("401.1", "34"), ("401.1", "35")]
    assert (res.ilm, res.alm) == (0.5, 0.5)  # i_{4,3}, a_{4,3}


def test_figure_7_on_the_real_icd_tree_with_the_data_domain():
    """With |A| read as the data's codes (Table 3's |ICD|), the real ICD-9-CM
    tree gives Figure 7's i matrix as it stands: 401.1 and 401.9 are the
    data's two codes, both under 401, so each costs 2/2 = 1 to generalize.
    Over all 14,567 codes the same step would cost 3/14,567."""
    from anonymizers.longitudinal.hierarchies import data_domain

    trees, (t1, t4) = encode([T1, T4], icd_h=icd9cm())
    ids = np.concatenate([t1.icd, t4.icd])
    data = Trees(data_domain(trees.icd, ids), trees.age)
    res = ags(t4, t1, data, 0.5, 0.5)
    assert res.i.tolist() == [[0, 0.5, 1, 1.5], [0.5, 1, 1.5, 2], [1, 0.5, 1, 1.5],
                              [1.5, 1, 0.5, 1], [2, 1.5, 1, 0.5]]
    assert res.r[1:, :].tolist() == [[U, D, L, L], [U, D, D, L], [U, U, D, D], [U, U, U, D]]
    whole = ags(t4, t1, trees, 0.5, 0.5)
    assert whole.i[1, 1] == pytest.approx(2 * 3 / 14567 * 0.5)


def test_alignment_example_of_section_iv_3_1():
    """X = (401.1,34)(401.1,35)(401.1,37), Y = (401.1,34)(401.1,36): the three
    sub-solutions cost 4, 2.5 and 6 (the text adds unweighted losses)."""
    trees, (x, y) = encode([[("401.1", 34), ("401.1", 35), ("401.1", 37)],
                            [("401.1", 34), ("401.1", 36)]])
    res = ags(x, y, trees, 1.0, 1.0)
    total = res.i + res.a
    _, gen_37_36 = combined_lm(trees.age, x.age[2], False, y.age[1], False)
    assert gen_37_36 == 2.0  # LCA of 36 and 37 is [33-40]: 1 * 2
    assert total[2, 1] + 0 + gen_37_36 == 4.0   # generalize (401.1,37) with (401.1,36)
    assert total[2, 2] + 2 == 2.5               # suppress (401.1,37)
    assert total[3, 1] + 2 == 6.0               # suppress (401.1,36)
    assert total[3, 2] == 2.5 and res.r[3, 2] == UP
    assert labels(trees, res.trajectory) == [("401.1", "34"), ("401.1", "35-36")]
    half = ags(x, y, trees, 0.5, 0.5)
    assert labels(trees, half.trajectory) == labels(trees, res.trajectory)
    assert half.ilm + half.alm == 1.25


def test_baseline_matches_on_index_and_suppresses_the_tail():
    trees, (x, y) = encode([[("401.1", 34), ("401.1", 35), ("401.1", 37)],
                            [("401.1", 34), ("401.1", 36)]])
    res = baseline(x, y, trees)
    assert labels(trees, res.trajectory) == [("401.1", "34"), ("401.1", "35-36")]
    assert (res.ilm, res.alm) == (1.0, 0.5 + 1.0)  # [35-36]: 2/8 * 2; (401.1, 37): 1 + 1
    assert res.matches.tolist() == [[0, 0], [1, 1]]


def test_figure_3c_pairs():
    trees, (t2, t3) = encode([[("401.1", 38), ("401.1", 40)], [("401.9", 38), ("401.1", 40)]])
    assert labels(trees, ags(t2, t3, trees, 0.5, 0.5).trajectory) == [("*", "38"),
                                                                        ("401.1", "40")]
    trees, (t5, t6) = encode([[("401.1", 39), ("401.9", 40)], [("401.1", 40), ("401.9", 40)]])
    assert labels(trees, ags(t5, t6, trees, 0.5, 0.5).trajectory) == [("401.1", "39-40"),
                                                                        ("401.9", "40")]


def literal_ags(x, y, trees, w_icd, w_age, i0=0.0, a0=0.0):
    """Algorithm 3 transcribed cell by cell (the oracle for the vectorised one)."""
    m, n = len(x), len(y)
    i = np.zeros((m + 1, n + 1))
    a = np.zeros((m + 1, n + 1))
    r = np.zeros((m + 1, n + 1), dtype=np.int8)
    sup = lambda tree, v, g: float(lm(tree, v, g, 0))  # noqa: E731
    i[0, 0], a[0, 0] = i0, a0
    for h in range(1, m + 1):
        i[h, 0] = i[h - 1, 0] + sup(trees.icd, x.icd[h - 1], x.icd_gen[h - 1]) * w_icd
        a[h, 0] = a[h - 1, 0] + sup(trees.age, x.age[h - 1], x.age_gen[h - 1]) * w_age
        r[h, 0] = UP
    for j in range(1, n + 1):
        i[0, j] = i[0, j - 1] + sup(trees.icd, y.icd[j - 1], y.icd_gen[j - 1]) * w_icd
        a[0, j] = a[0, j - 1] + sup(trees.age, y.age[j - 1], y.age_gen[j - 1]) * w_age
        r[0, j] = LEFT
    for h in range(1, m + 1):
        for j in range(1, n + 1):
            gi = float(combined_lm(trees.icd, x.icd[h - 1], x.icd_gen[h - 1],
                                   y.icd[j - 1], y.icd_gen[j - 1])[1])
            ga = float(combined_lm(trees.age, x.age[h - 1], x.age_gen[h - 1],
                                   y.age[j - 1], y.age_gen[j - 1])[1])
            c = {DIAG: i[h - 1, j - 1] + gi * w_icd,
                 LEFT: i[h, j - 1] + sup(trees.icd, y.icd[j - 1], y.icd_gen[j - 1]) * w_icd,
                 UP: i[h - 1, j] + sup(trees.icd, x.icd[h - 1], x.icd_gen[h - 1]) * w_icd}
            g = {DIAG: a[h - 1, j - 1] + ga * w_age,
                 LEFT: a[h, j - 1] + sup(trees.age, y.age[j - 1], y.age_gen[j - 1]) * w_age,
                 UP: a[h - 1, j] + sup(trees.age, x.age[h - 1], x.age_gen[h - 1]) * w_age}
            best = min((DIAG, LEFT, UP), key=lambda u: c[u] + g[u])  # first minimum wins
            i[h, j], a[h, j], r[h, j] = c[best], g[best], best
    return i, a, r


CODES = ["4011", "4019", "4010", "25000", "25001", "2724", "V154", "E9500", "486", "-1"]
pair = st.tuples(st.sampled_from(CODES), st.integers(0, 130))
trajectory = st.lists(pair, min_size=1, max_size=12)


@settings(max_examples=30)
@given(st.lists(trajectory, min_size=2, max_size=2), st.sampled_from([0.5, 0.2, 1.0]),
       st.floats(0, 3), st.floats(0, 3))
def test_vectorised_ags_equals_cell_by_cell(trajs, w_icd, i0, a0):
    trees, (x, y) = encode(trajs, icd9cm(), age_hierarchy())
    # make x look anonymized: generalize some of its values first
    x = Pairs(x.icd, x.age, x.icd_gen | (np.arange(len(x)) % 2 == 1), x.age_gen)
    res = ags(x, y, trees, w_icd, 1 - w_icd, i0, a0)
    i, a, r = literal_ags(x, y, trees, w_icd, 1 - w_icd, i0, a0)
    assert np.array_equal(res.i, i) and np.array_equal(res.a, a) and np.array_equal(res.r, r)


@given(st.lists(trajectory, min_size=1, max_size=8), st.sampled_from([0.5, 0.3]))
def test_batched_costs_equal_exact_alignments(trajs, w_icd):
    check_batched(trajs, w_icd, queries=[0, len(trajs) - 1])


def encoded(trajs):
    """(trees, pairs, Encoded) of trajectories on the real ICD-9-CM and age trees."""
    trees, pairs = encode(trajs, icd9cm(), age_hierarchy())
    icd = np.concatenate([p.icd for p in pairs])
    age = np.concatenate([p.age for p in pairs])
    iu, iv = np.unique(icd, return_inverse=True)
    au, av = np.unique(age, return_inverse=True)
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in pairs])])
    return trees, pairs, Encoded(iv, av, iu, au, offsets)


def check_batched(trajs, w_icd, queries):
    trees, pairs, enc = encoded(trajs)
    everyone = np.arange(len(pairs))
    model = CostModel(enc, trees, w_icd, 1 - w_icd)
    unit = CostModel(enc, trees, 1.0, 1.0)
    for t in queries:
        exact = [(lambda r: r.ilm + r.alm)(ags(pairs[t], p, trees, w_icd, 1 - w_icd))
                 for p in pairs]
        assert ags_costs(model, t, everyone) == pytest.approx(exact, abs=1e-9)
        exact = [(lambda r: r.ilm + r.alm)(baseline(pairs[t], p, trees)) for p in pairs]
        assert baseline_costs(unit, t, everyone) == pytest.approx(exact, abs=1e-9)
    # a cluster's anonymized trajectory as the query (the greedy MDAV step)
    x = ags(pairs[queries[0]], pairs[queries[-1]], trees, w_icd, 1 - w_icd).trajectory
    exact = [(lambda r: r.ilm + r.alm)(ags(x, p, trees, w_icd, 1 - w_icd)) for p in pairs]
    assert ags_costs(model, x, everyone) == pytest.approx(exact, abs=1e-9)
    exact = [(lambda r: r.ilm + r.alm)(baseline(x, p, trees)) for p in pairs]
    assert baseline_costs(unit, x, everyone) == pytest.approx(exact, abs=1e-9)


def test_batched_costs_over_mixed_lengths():
    """Candidates of very different lengths fall in different padded chunks."""
    rng = np.random.default_rng(3)
    trajs = [[(CODES[c], int(a)) for c, a in zip(rng.integers(0, 9, n), rng.integers(20, 80, n))]
             for n in [1, 2, 3, 5, 9, 17, 40, 90, 200, 3, 1, 60]]
    check_batched(trajs, 0.5, queries=[8, 10])


def test_batched_costs_when_every_length_class_is_its_own_chunk(monkeypatch):
    import anonymizers.longitudinal.batch as batch

    monkeypatch.setattr(batch, "PAD_CELLS", 1)
    lengths = np.array([1, 2, 3, 5, 9, 17, 40, 3, 1])
    assert [len(c) for c in batch._chunks(lengths)] == [3, 3, 2, 1]  # 1-2, 3-5, 9-17, 40
    assert sorted(np.concatenate(batch._chunks(lengths)).tolist()) == list(range(9))
    rng = np.random.default_rng(4)
    trajs = [[(CODES[c], int(a)) for c, a in zip(rng.integers(0, 9, n), rng.integers(20, 80, n))]
             for n in lengths]
    check_batched(trajs, 0.4, queries=[0, 6])


@settings(max_examples=30)
@given(st.lists(trajectory, min_size=2, max_size=2))
def test_a_larger_icd_weight_never_costs_more_icd_loss(trajs):
    """Section IV.4.5 (Figure 15): weights bias the loss towards one attribute.
    For one alignment this is exact: the optimal unweighted ILM does not grow
    with w_icd (and ALM does not shrink)."""
    trees, (x, y) = encode(trajs, icd9cm(), age_hierarchy())
    low, high = ags(x, y, trees, 0.1, 0.9), ags(x, y, trees, 0.9, 0.1)
    assert high.ilm / 0.9 <= low.ilm / 0.1 + 1e-9
    assert high.alm / 0.1 >= low.alm / 0.9 - 1e-9
