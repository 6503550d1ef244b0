"""Fresh pseudonyms for released records.

A pseudonym carries nothing of the source id: it is a random permutation of
0..n-1 drawn from the caller's seeded generator, formatted with a prefix.
"""

from __future__ import annotations

import numpy as np


def fresh(n: int, rng: np.random.Generator, prefix: str = "R") -> np.ndarray:
    """``n`` distinct pseudonyms in a random order drawn from ``rng``."""
    width = max(1, len(str(max(n - 1, 0))))
    order = rng.permutation(n)
    return np.array([f"{prefix}{i:0{width}d}" for i in order], dtype=object)
