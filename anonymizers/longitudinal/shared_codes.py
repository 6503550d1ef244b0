"""Opt-in, not in Tamersoy 2011 (``LDAConfig.shared_code_bonus``): cluster growth that
credits a candidate for the codes it shares with the cluster at 3-digit level.

A value is released at 3-digit (ICD-10-CM: category) level or finer only if every member
of its cluster holds a code of that category at the aligned position (the verifier's
in-order reading), so the values of a candidate t that can stay that fine in a cluster X
number at most the longest common subsequence of t's categories and X's values still at
that level.  IV.3.2's growth picks the candidate of least A-GS cost; with the bonus b it
picks the least ``cost - b * LCS``.  Under Definition 4 with the data's domain, a chapter
costs little more than a category (a 50-code domain: about 0.2 against 0.02 per value),
so the thesis' growth groups patients by age and lets their codes rise to the chapter; the
bonus makes shared codes count.  The release is still one A-GS alignment per cluster
shared by all its members, so k-anonymity and the verifier are untouched; what it costs
in ILM and ages is measured in benchmarks/lda.md.

With the bonus alone, shared codes outbid ages: the growth gathers patients of one
category decades apart and their ages rise to ``*``.  ``LDAConfig.age_block`` B prices
that too: a candidate whose ages would take the cluster's ages out of one node of the
age tree covering at most B ages (16: a 16-year interval of IV.4.4's tree) costs b more,
as much as one shared category is worth (``blocked``).  Once X's ages span more than B
(its first member's do, or no candidate was left inside), a candidate costs b more if it
widens them further: a price every candidate paid alike would change no choice.

``LDAConfig.lookahead`` L goes one step further: growth aligns X with each of the L
cheapest candidates under that cost and adds the one whose new X keeps the most values
at category level or finer plus ``AGE_WEIGHT`` times its ages within the block
(``kept_score``), and each cluster starts from the longest trajectory left, not MDAV's
farthest-from-the-mode: the release is no longer than its shortest member, and a long
first member otherwise takes short neighbours and loses most of its pairs.
"""

from __future__ import annotations

import numpy as np

from anonymizers.errors import ParameterError
from anonymizers.longitudinal.alignment import Pairs
from anonymizers.longitudinal.hierarchies import EncodedTree, category_level

#: weight of an age kept within the block against a code kept at category level in
#: ``kept_score``: half a code (0.2, 0.3 and 1 measured in benchmarks/lda.md, "Look-ahead growth")
AGE_WEIGHT = 0.5


def category_of(tree: EncodedTree) -> np.ndarray:
    """Per node, its ancestor-or-self at the category level (the coarsest at
    that level or finer); -1 for a node above it (a section, chapter, ``*``)."""
    level = category_level(tree.levels)
    if level is None:
        raise ParameterError("shared_code_bonus", "needs a code tree with a 3-digit "
                             "(category) level: the ICD-9-CM or ICD-10-CM tree")
    fine = np.isin(tree.level_names(np.arange(tree.n_nodes)).astype(str),
                   tree.levels[:tree.levels.index(level) + 1])
    out = np.full(tree.n_nodes, -1, dtype=np.int64)
    for d in range(tree.anc.shape[1] - 1, -1, -1):  # coarsest last wins
        up = tree.anc[:, d]
        hit = (up >= 0) & fine[np.maximum(up, 0)]
        out[hit] = up[hit]
    return out


class SharedCategories:
    """The categories of every input trajectory, padded into one table, and
    the LCS of a (possibly anonymized) trajectory with many of them at once."""

    def __init__(self, tree: EncodedTree, icd: np.ndarray, offsets: np.ndarray):
        self.category = category_of(tree)
        cats = self.category[np.asarray(icd, dtype=np.int64)]
        self.lengths = np.diff(offsets)
        self.table = np.full((len(self.lengths), max(1, int(self.lengths.max(initial=0)))), -2)
        owner = np.repeat(np.arange(len(self.lengths)), self.lengths)
        self.table[owner, np.arange(len(cats)) - np.repeat(offsets[:-1], self.lengths)] = cats

    def of(self, x: int | Pairs) -> np.ndarray:
        """Categories of trajectory ``x`` (an index or an anonymized trajectory)."""
        if isinstance(x, (int, np.integer)):
            return self.table[int(x), :self.lengths[int(x)]]
        return self.category[x.icd]

    def lcs(self, x: int | Pairs, candidates: np.ndarray) -> np.ndarray:
        """Per candidate, the longest common subsequence of its categories and
        the values of ``x`` at category level or finer."""
        candidates = np.asarray(candidates, dtype=np.int64)
        values = self.of(x)
        return lcs_lengths(values[values >= 0], self.table[candidates], self.lengths[candidates])


def lcs_step(row: np.ndarray, value, table: np.ndarray) -> np.ndarray:
    """One DP row of the LCS of a sequence against every row of ``table``
    (``row``: rows x cols+1, updated in place and returned) after the
    sequence's next ``value``; pad ``table`` with a value no sequence holds."""
    step = np.maximum(row[:, 1:], row[:, :-1] + (table == value))
    row[:, 1:] = np.maximum.accumulate(step, axis=1)
    return row


def lcs_lengths(x: np.ndarray, table: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The LCS length of sequence ``x`` with each row of ``table`` (row i
    holds a sequence of ``lengths[i]`` values, then padding)."""
    row = np.zeros((len(table), table.shape[1] + 1), dtype=np.int64)
    for value in x:
        lcs_step(row, value, table)
    return row[np.arange(len(table)), lengths]


def credited(from_cluster, shared: SharedCategories, bonus: float):
    """``from_cluster`` (growth's cost of X against candidates) minus ``bonus``
    per category a candidate shares with X (module doc)."""
    def cost(x, candidates, members=1):
        return from_cluster(x, candidates, members) - bonus * shared.lcs(x, candidates)
    return cost


def set_lca(tree: EncodedTree, nodes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per segment ``nodes[offsets[i]:offsets[i + 1]]`` (none empty), the lowest
    common ancestor of its nodes (Definition 5 over a set)."""
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    if len(starts) and (np.diff(offsets) <= 0).any():
        raise ValueError("set_lca: a segment is empty; it has no common ancestor")
    anc = tree.anc[np.asarray(nodes, dtype=np.int64)]
    lo, hi = np.minimum.reduceat(anc, starts, axis=0), np.maximum.reduceat(anc, starts, axis=0)
    # common at a depth implies common at every shallower one, so the common
    # depths are a prefix and the deepest is their count less one
    deepest = ((lo == hi) & (lo >= 0)).sum(axis=1) - 1
    return lo[np.arange(len(starts)), deepest]


class AgeSpans:
    """Per input trajectory, the LCA of its ages; and how many ages (leaves of
    the age tree) X's ages span, alone and with each candidate's."""

    def __init__(self, tree: EncodedTree, age: np.ndarray, offsets: np.ndarray):
        self.tree = tree
        self.own = set_lca(tree, age, offsets)

    def leaves(self, x: int | Pairs, candidates: np.ndarray) -> tuple[int, np.ndarray]:
        """(ages X spans, ages X and each candidate span together); an X whose
        pairs were all suppressed spans none."""
        theirs = self.own[np.asarray(candidates, dtype=np.int64)]
        if isinstance(x, (int, np.integer)):
            mine = self.own[int(x)]
        elif len(x) == 0:
            return 0, self.tree.leaves[theirs]
        else:
            mine = set_lca(self.tree, x.age, np.array([0, len(x)]))[0]
        return int(self.tree.leaves[mine]), self.tree.leaves[self.tree.lca(mine, theirs)]


def blocked(cost, spans: AgeSpans, block: int, penalty: float):
    """``cost`` plus ``penalty`` for each candidate whose ages and X's would
    span more than ``block`` ages, or, once X spans more, widen it (module doc)."""
    def priced(x, candidates, members=1):
        alone, joint = spans.leaves(x, candidates)
        return cost(x, candidates, members) + penalty * (joint > max(block, alone))
    return priced


def kept_score(icd_tree: EncodedTree, age_tree: EncodedTree, block: int):
    """An anonymized X's values at category level or finer plus ``AGE_WEIGHT``
    times its ages within ``block`` ages (module doc)."""
    fine_icd = category_of(icd_tree) >= 0
    fine_age = age_tree.leaves <= block

    def score(x: Pairs) -> float:
        return float(fine_icd[x.icd].sum() + AGE_WEIGHT * fine_age[x.age].sum())
    return score


def longest(lengths: np.ndarray):
    """``mdav``'s ``first``: the longest remaining trajectory (the first of ties)."""
    return lambda remaining: remaining[int(np.argmax(lengths[remaining]))]
