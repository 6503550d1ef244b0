"""The opt-in shared-code bonus of LDA's cluster growth (anonymizers/longitudinal/shared_codes.py):
its categories and LCS against plain definitions, what it changes, and the verifier on random data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.errors import ParameterError
from anonymizers.hierarchy import from_parent_map
from anonymizers.longitudinal import LDAConfig, framework, lda, shared_codes
from anonymizers.longitudinal import hierarchies as hz
from anonymizers.longitudinal.alignment import Pairs
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.longitudinal.shared_codes import (
    AgeSpans,
    SharedCategories,
    category_of,
    set_lca,
)
from anonymizers.longitudinal.trajectories import build_trajectories
from anonymizers.verify.longitudinal import verify_lda


def _icd9_tree(codes):
    display, level_of, levels = hz.ICD_STYLE["icd9cm"]
    tree, ids, _ = hz.encode_tree(hz.icd_hierarchy("icd9cm"), np.array(codes, dtype=object),
                                  display, level_of, levels)
    return tree, ids


def test_a_code_s_category_is_its_3_digit_ancestor_and_coarser_nodes_have_none():
    tree, ids = _icd9_tree(["4011", "4019", "401", "25000", "486"])
    cat = category_of(tree)
    label = {v: tree.labels[c] if c >= 0 else None for v, c in enumerate(cat)}
    assert [label[i] for i in ids] == ["401", "401", "401", "250", "486"]
    for v, name in enumerate(tree.labels):
        if name == "*" or "-" in name:
            assert cat[v] == -1, name


def test_an_icd10_code_s_category_is_its_3_character_ancestor():
    display, level_of, levels = hz.ICD_STYLE["icd10cm"]
    codes = ["I10", "E119", "S52521A", "C7A010"]
    tree, ids, _ = hz.encode_tree(hz.icd_hierarchy("icd10cm"), np.array(codes, dtype=object),
                                  display, level_of, levels)
    cat = category_of(hz.data_domain(tree, ids))
    assert [tree.labels[cat[i]] for i in ids] == ["I10", "E11", "S52", "C7A"]
    for v, name in enumerate(tree.labels):
        if name == "*" or "-" in name:
            assert cat[v] == -1, name


@pytest.mark.parametrize("bonus", [-1.0, float("inf"), float("nan"), 101])
def test_a_bonus_that_is_not_a_finite_weight_is_refused(bonus):
    with pytest.raises(ParameterError, match="shared_code_bonus"):
        LDAConfig(k=2, shared_code_bonus=bonus)


@pytest.mark.parametrize("options,field", [
    ({"age_block": 16}, "age_block"),
    ({"shared_code_bonus": 1.0, "age_block": -1}, "age_block"),
    ({"shared_code_bonus": 1.0, "age_block": 128}, "age_block"),
    ({"shared_code_bonus": 1.0, "lookahead": 5}, "lookahead"),
    ({"shared_code_bonus": 1.0, "age_block": 16, "lookahead": -1}, "lookahead")])
def test_an_age_block_or_lookahead_out_of_place_is_refused(options, field):
    with pytest.raises(ParameterError) as exc:
        LDAConfig(k=2, **options)
    assert exc.value.field == field


def test_a_tree_without_a_category_level_is_refused():
    tree = from_parent_map({"a": "ab", "b": "ab", "ab": "*"})
    df = pd.DataFrame({"patient_id": ["p", "q"], "code": ["a", "b"], "age": [30, 31]})
    with pytest.raises(ParameterError, match="3-digit"):
        lda(df, LDAConfig(k=2, seed=0, icd_hierarchy=tree, shared_code_bonus=1.0))


def _lcs(a, b) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = row[:]
        for j, y in enumerate(b, 1):
            row[j] = prev[j - 1] + 1 if x == y and x >= 0 else max(prev[j], row[j - 1])
    return row[-1]


CODES = ["4011", "4019", "25000", "25001", "2724", "486", "V700", "7807"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(CODES), min_size=0, max_size=7), min_size=1,
                max_size=8), st.lists(st.sampled_from(CODES + ["401-405", "*"]), max_size=7))
def test_the_lcs_is_the_plain_longest_common_subsequence_of_categories(trajectories, x_codes):
    codes = [c for t in trajectories for c in t] + x_codes
    tree, ids = _icd9_tree(codes or ["486"])
    cat = category_of(tree)
    lengths = [len(t) for t in trajectories]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    shared = SharedCategories(tree, ids[:offsets[-1]], offsets)
    x_ids = np.array([tree.index[c] for c in x_codes], dtype=np.int64)
    x = Pairs(x_ids, np.zeros(len(x_ids), dtype=np.int64), np.zeros(len(x_ids), bool),
              np.zeros(len(x_ids), bool))
    seqs = [list(cat[ids[offsets[i]:offsets[i + 1]]]) for i in range(len(lengths))]
    everyone = np.arange(len(lengths))
    assert shared.lcs(x, everyone).tolist() == [_lcs(list(cat[x_ids]), s) for s in seqs]
    assert shared.lcs(0, everyone).tolist() == [_lcs(seqs[0], s) for s in seqs]


def _age_tree(ages):
    tree, ids, _ = hz.encode_tree(hz.age_hierarchy(), np.array(ages).astype(str),
                                  level_of=hz.age_level, levels=hz.AGE_LEVELS)
    return tree, ids


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 130), min_size=1, max_size=6), min_size=1,
                max_size=6), st.lists(st.integers(0, 10**6), max_size=5))
def test_an_age_span_is_the_plain_lca_of_the_ages(trajectories, x_picks):
    """``set_lca`` and ``AgeSpans`` against folding Definition 5's pairwise LCA,
    ages outside 1..128 (released as ``*``) and an X of any node included."""
    flat = [a for t in trajectories for a in t]
    tree, ids = _age_tree(flat)
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in trajectories])]).astype(np.int64)

    def folded(nodes):
        out = nodes[0]
        for v in nodes[1:]:
            out = int(tree.lca(out, v))
        return out
    own = [folded(ids[offsets[i]:offsets[i + 1]]) for i in range(len(trajectories))]
    assert set_lca(tree, ids, offsets).tolist() == own
    spans, everyone = AgeSpans(tree, ids, offsets), np.arange(len(trajectories))
    x_ids = np.array([pick % tree.n_nodes for pick in x_picks], dtype=np.int64)
    x = Pairs(np.zeros(len(x_ids), dtype=np.int64), x_ids, np.zeros(len(x_ids), bool),
              np.zeros(len(x_ids), bool))
    alone, joint = spans.leaves(x, everyone)
    if len(x_ids):
        assert alone == tree.leaves[folded(list(x_ids))]
        assert joint.tolist() == [tree.leaves[folded(list(x_ids) + [o])] for o in own]
    else:
        assert alone == 0 and joint.tolist() == [tree.leaves[o] for o in own]
    alone, joint = spans.leaves(0, everyone)
    assert joint.tolist() == [tree.leaves[folded([own[0], o])] for o in own]


def test_an_empty_segment_has_no_common_ancestor():
    tree, ids = _age_tree([30, 31])
    with pytest.raises(ValueError, match="empty"):
        set_lca(tree, ids, np.array([0, 1, 1, 2]))


def test_an_age_block_spans_16_ages_on_the_thesis_tree():
    tree, ids = _age_tree([33, 48, 49, 64, 65])
    offsets = np.arange(6)
    spans = AgeSpans(tree, ids, offsets)
    assert spans.leaves(0, np.arange(5))[1].tolist() == [1, 16, 32, 32, 128]  # 33-48, 33-64, then *: 65 is in 65-128


def _priced(rows, bonus, block):
    """Growth's cost with A-GS's own part set to zero: what the bonus and the
    block add, per candidate."""
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    config = LDAConfig(k=2, seed=0, shared_code_bonus=bonus, age_block=block)
    traj = build_trajectories(df, "t")
    trees, icd, age, _ = framework._encode(traj, config)
    return framework._growth_cost(lambda x, c, m=1: np.zeros(len(c)), trees, icd, age,
                                  traj, config)


def test_leaving_the_block_costs_one_shared_category():
    # p0 at 30 (block 17-32); p1 shares 401 inside it, p2 shares 401 outside
    # it (30..50 span 1-64), p3 shares nothing inside it, p4 nothing outside
    rows = [("p0", "4011", 30), ("p1", "4019", 31), ("p2", "4011", 50),
            ("p3", "25000", 31), ("p4", "25000", 50)]
    cost = _priced(rows, bonus=3.0, block=16)
    assert cost(0, np.arange(1, 5)).tolist() == [-3.0, 0.0, 0.0, 3.0]


def test_once_the_cluster_spans_more_than_the_block_only_widening_it_costs():
    # p0's own ages 40 and 60 span 33-64: p1 (35) stays inside, p2 (20) widens
    # it to 1-64, p3 (70) to every age
    rows = [("p0", "4011", 40), ("p0", "25000", 60), ("p1", "4011", 35),
            ("p2", "7807", 20), ("p3", "7807", 70)]
    cost = _priced(rows, bonus=2.0, block=16)
    assert cost(0, np.arange(1, 4)).tolist() == [-2.0, 2.0, 2.0]


def _cohort() -> pd.DataFrame:
    """Five patients share 401.1 at ages far apart; ten others hold unrelated
    codes at those same ages, so IV.3.2's growth groups by age."""
    other = ["25000", "4860", "7807", "V700", "2724"]
    rows = []
    for i, age in enumerate([30, 50, 70, 90, 110]):
        rows += [(f"a{i}", "4011", age + i % 2), (f"b{i}", other[i], age),
                 (f"c{i}", other[(i + 1) % 5], age + 1)]
    return pd.DataFrame(rows, columns=["patient_id", "code", "age"])


def test_the_bonus_groups_the_patients_who_share_a_code_and_keeps_it():
    df = _cohort()
    thesis = lda(df, LDAConfig(k=5, seed=0))
    bonus = lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0))
    assert thesis.metrics["icd_kept_3digit_or_finer"] == 0.0
    source = bonus.pseudonym_map.rename(columns={"patient_id": "source"})
    kept = bonus.records.merge(source, left_on="patient_id", right_on="pseudonym")
    holders = kept.loc[kept["code"] == "401.1", "source"]
    assert sorted(holders) == [f"a{i}" for i in range(5)]
    for result in (thesis, bonus):
        assert verify_lda(result.records, result.pseudonym_map, df, 5).ok


def _ages_apart_cohort() -> pd.DataFrame:
    """Ten patients hold 401.1, five in their thirties and five in their
    seventies; two of each group also hold 250.00, which the bonus alone
    chases across the decades."""
    rows = []
    for i in range(5):
        for group, age in (("y", 33 + i), ("o", 71 + i)):
            rows.append((f"{group}{i}", "4011", age))
            if i < 2:
                rows.append((f"{group}{i}", "25000", age))
    return pd.DataFrame(rows, columns=["patient_id", "code", "age"])


def test_the_age_block_keeps_the_code_and_the_ages_the_bonus_alone_spreads():
    df = _ages_apart_cohort()
    alone = lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0))
    block = lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0, age_block=16))
    assert alone.metrics["age_kept_16year_or_finer"] == 0.0  # every age released as *
    # 401.1 of all ten and their ages in 33-40 and 65-80; the four 250.00 pairs suppressed
    assert block.metrics["age_kept_16year_or_finer"] == pytest.approx(100 * 10 / 14)
    assert block.metrics["icd_kept_3digit_or_finer"] == alone.metrics["icd_kept_3digit_or_finer"]
    for result in (alone, block):
        assert verify_lda(result.records, result.pseudonym_map, df, 5).ok


def test_the_lookahead_grows_from_the_longest_trajectory_left(monkeypatch):
    """The framework wires the look-ahead in: clusters start from the longest
    trajectory left, and growth scores each of the shortlist's alignments."""
    rows = [(f"p{i}", code, 60 + i) for i in range(10)
            for code in (["4011", "25000", "2724"][: 1 + i % 3])]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    firsts, scored = [], []
    real_first, real_score = shared_codes.longest, shared_codes.kept_score

    def spy_first(lengths):
        pick = real_first(lengths)
        return lambda remaining: firsts.append(int(lengths[pick(remaining)])) or pick(remaining)

    def spy_score(*args):
        score = real_score(*args)
        return lambda x: scored.append(len(x)) or score(x)
    monkeypatch.setattr(shared_codes, "longest", spy_first)
    monkeypatch.setattr(shared_codes, "kept_score", spy_score)
    result = lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0, age_block=16, lookahead=3))
    assert firsts == [3, 3] and scored  # the two clusters start from 3-pair patients
    assert verify_lda(result.records, result.pseudonym_map, df, 5).ok
    firsts.clear()
    lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0, age_block=16))
    assert firsts == []
    one = lda(df, LDAConfig(k=5, seed=0, shared_code_bonus=1.0, age_block=16, lookahead=1))
    # a shortlist of one tries nothing, one of three up to three per step: both
    # price the same candidates, so the difference is the trials
    assert result.metrics["n_alignments"] > one.metrics["n_alignments"]


pair = st.tuples(st.sampled_from(CODES + ["E9500", "V154"]), st.integers(0, 130))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(pair, min_size=1, max_size=8), min_size=2, max_size=14),
       st.integers(2, 4), st.sampled_from([0.25, 1.0, 5.0]), st.booleans(), st.integers(0, 2),
       st.sampled_from([0, 1, 4, 16]), st.sampled_from([0, 1, 3]))
def test_a_release_with_the_bonus_passes_the_verifier(trajectories, k, bonus, weighted, rounds,
                                                      block, ahead):
    if len(trajectories) < k:
        return
    rows = [(f"id{i}", c, a) for i, t in enumerate(trajectories) for c, a in t]
    df = pd.DataFrame(rows, columns=["patient_id", "code", "age"])
    config = LDAConfig(k=k, seed=0, shared_code_bonus=bonus, member_weighted=weighted,
                       refine_rounds=rounds, age_block=block, lookahead=ahead if block else 0)
    try:
        result = lda(df, config)
    except NothingToRelease as exc:  # checked: the withheld release is all ('*', '*')
        assert "keeps nothing" in str(exc)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(framework, "_keeps_anything", lambda records: True)
            result = lda(df, config)
        assert (result.records[["code", "age"]] == "*").all().all()
    verdict = verify_lda(result.records, result.pseudonym_map, df, k)
    assert verdict.ok, verdict.violations
    assert k <= result.metrics["min_cluster_size"]
