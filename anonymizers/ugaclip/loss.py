"""Information loss of anonymized items (Loukides et al., PNAS 2010, SI Definition 2) and its
semantic weight w: the share of the code system's leaves under the item's lowest common ancestor.
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-loss."""

from __future__ import annotations

import math

import numpy as np

from anonymizers.hierarchy import ROOT, Hierarchy
from anonymizers.ugaclip.codes import place, system_of


def information_loss(size: int, weight: float, support: int, n_codes: int,
                     n_records: int) -> float:
    """IL of Definition 2 for an item of ``size`` codes held by ``support`` records."""
    if size < 1 or n_codes < size or n_records < 1:
        raise ValueError("need 1 <= size <= n_codes and n_records >= 1")
    ratio = math.ldexp(1.0, size - n_codes) * (1 - 2.0 ** -size) / (1 - 2.0 ** -n_codes)
    return ratio * weight * support / n_records


def log10_information_loss(size: int, weight: float, support: int, n_codes: int,
                           n_records: int) -> float:
    """log10 IL, finite whenever weight and support are positive."""
    if weight <= 0 or support <= 0:
        return -math.inf
    log2 = (size - n_codes) + math.log2(1 - 2.0 ** -size) - math.log2(1 - 2.0 ** -n_codes)
    return log2 * math.log10(2) + math.log10(weight) + math.log10(support / n_records)


def log_score(size: int, weight: float, support: int) -> float:
    """log2 of IL x (2^M - 1) x N: orders candidate items as IL does."""
    if weight <= 0 or support <= 0:
        return -math.inf
    return size + math.log2(1 - 2.0 ** -size) + math.log2(weight) + math.log2(support)


class SemanticWeights:
    """w(i~) for items over the vocabulary ``codes``, from ``hierarchy``
    (the tree of ``code_system``: ``for_system(code_system)``; a tree of
    another system is a ParameterError, see ``codes.system_of``).

    Each code's root-first path is a row of node ids (-1 past its end); an
    item's LCA is the common prefix of its codes' rows, so the LCA of two
    merged items is the common prefix of theirs, computed for many candidate
    partners at once.
    """

    def __init__(self, codes, hierarchy: Hierarchy, fallback: float = 1.0,
                 code_system: str | None = None):
        self.fallback = fallback
        self.code_system = system_of(hierarchy, code_system)
        self.total = hierarchy.n_leaves(ROOT)
        nodes_of = [place(c, hierarchy, self.code_system) for c in map(str, codes)]
        paths = [hierarchy.path(n)[::-1] if n is not None else None for n in nodes_of]
        nodes: dict[str, int] = {}
        depth = max((len(p) for p in paths if p), default=1)
        self.rows = np.full((len(paths), depth), -1, dtype=np.int64)
        for i, path in enumerate(paths):
            if path:
                self.rows[i, :len(path)] = [nodes.setdefault(n, len(nodes)) for n in path]
        self.placed = np.array([p is not None for p in paths], dtype=bool)
        # leaves under each node, and last the root's, for rows with no node
        self.leaves = np.array([hierarchy.n_leaves(n) for n in nodes] + [self.total], dtype=float)
        self.unplaced = sorted(str(c) for c, p in zip(codes, paths) if p is None)

    def lca_row(self, members) -> tuple[np.ndarray, bool]:
        """(LCA row, all placed) of the codes ``members``."""
        rows = self.rows[np.asarray(members)]
        return _prefix(rows[0], rows), bool(self.placed[np.asarray(members)].all())

    def weight(self, members) -> float:
        """w of the item made of the codes ``members``."""
        if len(members) <= 1:
            return 0.0
        row, placed = self.lca_row(members)
        return self._w(row[None, :], np.array([placed]))[0]

    def merged(self, row: np.ndarray, placed: bool, rows: np.ndarray,
               placed_many: np.ndarray) -> np.ndarray:
        """w of the item (LCA ``row``) merged with each item of ``rows`` (size >= 2)."""
        match = np.logical_and.accumulate((rows == row) & (row >= 0), axis=1)
        common = np.where(match, row, -1)
        return self._w(common, placed & placed_many)

    def _w(self, rows: np.ndarray, placed: np.ndarray) -> np.ndarray:
        depth = (rows >= 0).sum(axis=1)
        node = np.where(depth > 0, rows[np.arange(len(rows)), np.maximum(depth - 1, 0)], -1)
        return np.where(placed, self.leaves[node] / self.total, self.fallback)


def _prefix(first: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The longest prefix of ``first`` shared by every row of ``rows``."""
    match = np.logical_and.accumulate((rows == first) & (first >= 0), axis=1).all(axis=0)
    return np.where(match, first, -1)


def log_scores(sizes: np.ndarray, weights: np.ndarray, supports: np.ndarray) -> np.ndarray:
    """Vectorised ``log_score``."""
    sizes = np.asarray(sizes, dtype=float)
    with np.errstate(divide="ignore"):
        return (sizes + np.log2(-np.expm1(-sizes * np.log(2))) + np.log2(weights)
                + np.log2(supports))
