"""The ICD-10-CM tree (simple_icd_10_cm) and the hierarchy-based utility
policies, UGACLIP's semantic weights and LDA's encoded tree on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonymizers import codesystems as cs
from anonymizers.errors import InputError, ParameterError
from anonymizers.hierarchy import ROOT, for_system, icd10cm
from anonymizers.policies import hierarchy_policy, similarity_policy, unplaced_codes

SEVEN = ["S52521A", "S52521D", "T360X1A", "T360X2A", "S0100XA", "M80011A"]


@pytest.fixture(scope="module")
def tree():
    return icd10cm()


def test_paths_chapter_block_category_subcategory_code(tree):
    assert tree.path("S52.521A") == ["S52521A", "S52521", "S5252", "S525", "S52", "S50-S59",
                                     "S00-T88", ROOT]
    # placeholder X in the 5th and 6th position
    assert tree.path("t36.0x1a") == ["T360X1A", "T360X1", "T360X", "T360", "T36", "T36-T50",
                                     "S00-T88", ROOT]
    # a 7-character code whose placeholder fills a missing 6th character
    # hangs under the 5-character subcategory (the package's reading)
    assert tree.path("S01.00XA")[:3] == ["S0100XA", "S0100", "S010"]
    assert tree.path("I10") == ["I10", "I10-I1A", "I00-I99", ROOT]


def test_one_category_blocks_get_a_range_label(tree):
    assert tree.path("B10.01") == ["B1001", "B100", "B10", "B10-B10", "A00-B99", ROOT]


def test_shape(tree):
    chapters = tree.children(ROOT)
    assert len(chapters) == 22 and "A00-B99" in chapters and "U00-U85" in chapters
    leaves = [n for n in tree.parent if not tree.children(n)]
    assert tree.n_leaves(ROOT) == len(leaves) > 70_000
    assert all("-" not in n for n in leaves)  # every leaf is a code, no empty block
    assert {tree.depth(n) for n in leaves} == {3, 4, 5, 6, 7}
    categories = [n for n in tree.parent if "-" not in n and len(n) == 3]
    assert {tree.depth(c) for c in categories} == {3}


def test_for_system():
    assert for_system("icd10cm") is icd10cm()
    with pytest.raises(ParameterError):
        for_system("icd10")


def test_policy_levels_on_icd10():
    codes = SEVEN + ["S52.5", "I10", "I11.0", "E11.9", "E1165", "NOTACODE"]
    assert hierarchy_policy(codes, 1, code_system="icd10cm") == [
        ["E11.9", "E1165"], ["I10"], ["I11.0"], ["M80011A"], ["S0100XA"],
        ["S52.5", "S52521A", "S52521D"], ["T360X1A", "T360X2A"]]
    assert hierarchy_policy(codes, 2, code_system="icd10cm") == [
        ["E11.9", "E1165"], ["I10", "I11.0"], ["M80011A"], ["S0100XA"],
        ["S52.5", "S52521A", "S52521D"], ["T360X1A", "T360X2A"]]
    assert hierarchy_policy(codes, 3, code_system="icd10cm") == [
        ["E11.9", "E1165"], ["I10", "I11.0"], ["M80011A"],
        ["S0100XA", "S52.5", "S52521A", "S52521D", "T360X1A", "T360X2A"]]
    assert unplaced_codes(codes, code_system="icd10cm") == ["NOTACODE"]


def test_policy_takes_a_tree_or_a_system_not_both(tree):
    with pytest.raises(ParameterError):
        hierarchy_policy(["I10"], 1, hierarchy=tree, code_system="icd10cm")
    with pytest.raises(ParameterError):
        hierarchy_policy(["I10"], 1, code_system="icd11")


def test_similarity_policy_keeps_tree_neighbours(tree):
    policy = similarity_policy(["T360X2A", "I10", "S52521A", "T360X1A", "A000"], 2,
                               code_system="icd10cm")
    assert policy == [["A000", "I10"], ["S52521A", "T360X1A"], ["T360X2A"]]


def test_ugaclip_weights_on_icd10(tree):
    from anonymizers.ugaclip.loss import SemanticWeights

    w = SemanticWeights(["T360X1A", "T360X2A", "S52521A", "I10"], tree)
    # two codes under T360X (2 of its leaves... n_leaves/total) weigh less than
    # two codes only joined at the chapter
    assert 0 < w.weight([0, 1]) < w.weight([0, 2]) < w.weight([0, 3]) <= 1
    assert w.unplaced == []


def test_lda_encoded_tree_on_icd10():
    from anonymizers.longitudinal.hierarchies import encode_tree

    enc, ids, unknown = encode_tree(icd10cm(), ["T36.0X1A", "T360X2A", "I10", "bad"])
    assert unknown.tolist() == [False, False, False, True]
    lca = enc.labels[enc.lca(ids[0], ids[1])]
    assert lca == "T360X" and enc.labels[enc.lca(ids[0], ids[2])] == ROOT


# --- property tests: ICD-10-CM code strings --------------------------------

def _codes():
    return sorted(n for n in icd10cm().parent if "-" not in n)


LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ALNUM = LETTERS + "0123456789"


@st.composite
def written(draw, codes):
    """A real code as people write it: dotted or not, any case, padded."""
    code = draw(st.sampled_from(codes))
    if len(code) > 3 and draw(st.booleans()):
        code = code[:3] + "." + code[3:]
    if draw(st.booleans()):
        code = code.lower()
    return draw(st.sampled_from(["", " ", "\t"])) + code + draw(st.sampled_from(["", " "]))


@st.composite
def shaped(draw):
    """A random ICD-10-CM-shaped string: letter, digit, alphanumeric, then up
    to four characters drawn from letters, digits and the placeholder X."""
    head = draw(st.sampled_from(LETTERS)) + draw(st.sampled_from("0123456789")) \
        + draw(st.sampled_from(ALNUM))
    tail = draw(st.text(alphabet="X" * 5 + ALNUM, max_size=4))
    return head + tail


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data())
def test_written_codes_normalise_to_their_node(data):
    tree, codes = icd10cm(), _codes()
    code = data.draw(written(codes))
    clean = cs.normalize([code])[0]
    assert cs.normalize([clean])[0] == clean  # idempotent
    assert cs.is_valid([code], "icd10cm").tolist() == [True]
    assert tree.node(code) == clean and tree.path(code)[-1] == ROOT


@SETTINGS
@given(strings=st.lists(shaped(), min_size=1, max_size=30))
def test_validity_is_membership_and_errors_name_the_first_bad_row(strings):
    tree = icd10cm()
    member = np.array([s in tree for s in strings])
    assert cs.is_valid(strings, "icd10cm").tolist() == member.tolist()
    out = cs.validate(strings, "icd10cm", drop=True)
    assert out.dropped == int((~member).sum())
    assert out.codes.tolist() == [s for s, m in zip(strings, member) if m]
    if not member.all():
        with pytest.raises(InputError) as err:
            cs.validate(strings, "icd10cm", field="dx")
        assert err.value.row == int(np.flatnonzero(~member)[0]) + 1
        assert all(s not in str(err.value) for s in strings if len(s) > 2)


@SETTINGS
@given(data=st.data(), level=st.sampled_from([1, 2, 3]))
def test_policies_partition_the_placed_codes_by_their_ancestor(data, level):
    tree, codes = icd10cm(), _codes()
    mixed = data.draw(st.lists(st.one_of(written(codes), shaped()), max_size=40))
    policy = hierarchy_policy(mixed, level, code_system="icd10cm")
    flat = [c for u in policy for c in u]
    assert len(flat) == len(set(flat))
    placed = set(mixed) - set(unplaced_codes(mixed, level, code_system="icd10cm"))
    assert set(flat) == {str(c) for c in placed}
    depth = {1: 3, 2: 2, 3: 1}[level]  # category, block, chapter
    for u in policy:
        groups = {tree.path(c)[::-1][depth] for c in u}
        assert len(groups) == 1
    keys = [tree.path(u[0])[::-1][depth] for u in policy]
    assert len(keys) == len(set(keys))
