"""Hierarchies and the Loss Metric of LDA (Tamersoy 2011, Section IV.2.5-6:
Figure 5, Example 2, Definitions 4-8, Example 4)."""

from __future__ import annotations

import numpy as np
import pytest

from anonymizers.hierarchy import from_parent_map, icd9cm
from anonymizers.longitudinal.hierarchies import (age_hierarchy, encode_tree, icd_display,
                                                  icd_level)
from anonymizers.longitudinal.loss import combined_lm, dataset_lm, lm, pair_loss, trajectory_lm

FIG6 = from_parent_map({"401.0": "*", "401.1": "*", "401.9": "*"})


def age_tree(values=("33", "34", "35", "36", "37", "38", "39", "40")):
    return encode_tree(age_hierarchy(33, 40), list(values))


def test_figure_5_age_hierarchy():
    h = age_hierarchy(33, 40)
    assert h.path("35") == ["35", "35-36", "33-36", "*"]
    assert h.n_leaves("*") == 8 and h.n_leaves("37-40") == 4
    assert h.lca(["36", "37"]) == "*"  # Example 2's root [33-40]


def test_thesis_age_tree_is_an_8_level_full_binary_tree():
    h = age_hierarchy()
    assert h.n_leaves("*") == 128
    assert {len(h.path(str(a))) for a in range(1, 129)} == {8}
    assert h.path("39") == ["39", "39-40", "37-40", "33-40", "33-48", "33-64", "1-64", "*"]
    assert all(len(h.children(n)) == 2 for n in set(h.parent.values()) | {"*"})
    with pytest.raises(ValueError):
        age_hierarchy(1, 100)


def test_example_4_generalizing_33_34_to_33_36_costs_a_quarter():
    tree, ids, _ = age_tree()
    n3334, n3336 = tree.index["33-34"], tree.index["33-36"]
    assert lm(tree, n3334, True, n3336) == 0.25


def test_definition_4_reading_ungeneralized_values_count_zero_leaves():
    tree, ids, _ = age_tree()
    a35, a36, a37 = (tree.index[s] for s in ("35", "36", "37"))
    assert lm(tree, a35, False, 0) == 1.0  # suppression costs 1
    anc, cost = combined_lm(tree, a35, False, a36, False)
    assert tree.labels[anc] == "35-36" and cost == 0.5  # 2/8 * 2
    anc, cost = combined_lm(tree, a36, False, a37, False)
    assert tree.labels[anc] == "*" and cost == 2.0  # 1 * 2
    assert lm(tree, a35, False, a35) == 0.0
    icd, ids, _ = encode_tree(FIG6, ["401.1", "401.9"])
    assert combined_lm(icd, ids[0], False, ids[1], False)[1] == 2.0  # Example 5: (1 + 1)


def test_losses_telescope_along_a_path():
    tree, _, _ = age_tree()
    a33, n3334, n3336 = tree.index["33"], tree.index["33-34"], tree.index["33-36"]
    assert lm(tree, a33, False, n3334) + lm(tree, n3334, True, n3336) == lm(tree, a33, False,
                                                                            n3336)


def test_icd9_tree_levels_and_labels():
    tree, ids, unknown = encode_tree(icd9cm(), ["401.1", "4019", "-1", "V15.4", "E9500"],
                                     display=icd_display, level_of=icd_level)
    assert unknown.tolist() == [False, False, True, False, False]
    assert ids[2] == 0 and tree.labels[0] == "*"
    assert tree.label_of(ids) == ["401.1", "401.9", "*", "V15.4", "E950.0"]
    assert tree.labels[tree.lca(ids[0], ids[1])] == "401"
    assert tree.labels[tree.lca(ids[0], ids[3])] == "*"
    levels = tree.level_names(np.array([tree.index[s] for s in
                                        ("4011", "401", "401-405", "390-459", "*")]))
    assert levels.tolist() == ["4-digit", "3-digit", "section", "chapter", "any"]
    assert tree.domain == icd9cm().n_leaves("*")
    # 3-digit generalization of a 4-digit code costs its category's leaves over |ICD|
    assert lm(tree, ids[0], False, tree.index["401"]) == 3 / tree.domain


def test_definitions_7_and_8_per_trajectory_and_dataset():
    tree, ids, _ = age_tree(["33", "34", "35", "36"])
    n3334 = tree.index["33-34"]
    # trajectory 1: (33 -> 33-34, 34 -> 33-34); trajectory 2: 35 kept, 36 suppressed
    released = np.array([n3334, n3334, ids[2], -1])
    per_pair = pair_loss(tree, ids, released)
    assert per_pair.tolist() == [0.25, 0.25, 0.0, 1.0]
    offsets = np.array([0, 2, 4])
    assert trajectory_lm(per_pair, offsets).tolist() == [0.25, 0.5]
    assert dataset_lm(per_pair, offsets) == 0.375
    assert dataset_lm(np.zeros(0), np.array([0])) == 0.0


def test_values_outside_the_hierarchy_cost_one():
    tree, ids, unknown = encode_tree(age_hierarchy(33, 40), ["0", "33"])
    assert unknown.tolist() == [True, False]
    assert pair_loss(tree, ids, np.array([0, ids[1]])).tolist() == [1.0, 0.0]


def test_data_domain_counts_the_data_codes_under_each_node():
    """|A| = the data's distinct known codes; a code that is also an inner
    node (2841 over 28411) counts itself and what is under it; codes outside
    the hierarchy (released as the root) are not in the domain."""
    from anonymizers.longitudinal.hierarchies import data_domain

    codes = ["4011", "4019", "4011", "28411", "2841", "25000", "-1"]
    tree, ids, unknown = encode_tree(icd9cm(), codes)
    data = data_domain(tree, ids)
    leaves = dict(zip(data.labels.tolist(), data.leaves.tolist()))
    assert data.domain == 5 and leaves["*"] == 5
    assert leaves["401"] == 2 and leaves["2841"] == 2 and leaves["284"] == 2
    assert leaves["4011"] == 1 and leaves["390-459"] == 2 and leaves["240-279"] == 1
    assert unknown.tolist() == [False] * 6 + [True]
    assert lm(data, tree.index["4011"], False, tree.index["401"]) == pytest.approx(2 / 5)
    empty = data_domain(*encode_tree(icd9cm(), ["-1"])[:2])
    assert empty.domain == 1
