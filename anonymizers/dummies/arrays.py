"""Sort-based set operations on integer arrays (no hashing of whole arrays)."""

from __future__ import annotations

import numpy as np


def member(sorted_values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask of the ``x`` present in ``sorted_values`` (binary search)."""
    if len(sorted_values) == 0:
        return np.zeros(len(x), dtype=bool)
    idx = np.minimum(np.searchsorted(sorted_values, x), len(sorted_values) - 1)
    return sorted_values[idx] == x


def first_per_group(values: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of each value."""
    order = np.argsort(values, kind="stable")
    first = np.ones(len(values), dtype=bool)
    first[order[1:]] = values[order[1:]] != values[order[:-1]]
    return first
