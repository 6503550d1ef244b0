"""The k^m-anonymity test of VERPART's line 12 (Fig. 9), on row bitmasks.

A chunk is k^m-anonymous when every set of at most ``m`` codes that occurs in
one of its subrecords occurs in at least ``k`` of them (Section 3.1, after
[53]).  VERPART grows a chunk that is already k^m-anonymous by one code ``t``;
only the sets holding ``t`` change support, so the test looks at the rows of
``t`` alone.

Each code of a chunk is a Python int whose bit ``r`` is set when row ``r``
holds it.  Restricted to the rows of ``t``, codes with the same pattern are
interchangeable, and a code present in all of them changes no support, so the
test enumerates the distinct intersections of at most ``m - 1`` patterns level
by level (a set of ints per level, never larger than the number of row
subsets that occur), stopping at the first support in ``[1, k)``.
"""

from __future__ import annotations

import numpy as np


def row_masks(dense: np.ndarray) -> list[int]:
    """One bitmask per column of a boolean (rows x columns) array."""
    if dense.shape[1] == 0:
        return []
    packed = np.packbits(dense.astype(bool), axis=0, bitorder="little")
    return [int.from_bytes(packed[:, j].tobytes(), "little") for j in range(dense.shape[1])]


def can_add(chunk: list[int], t: int, k: int, m: int) -> bool:
    """True when the k^m-anonymous chunk with code masks ``chunk`` stays
    k^m-anonymous after adding the code with mask ``t``."""
    n_t = t.bit_count()
    if 0 < n_t < k:
        return False
    if m == 1 or n_t == 0:
        return True
    patterns = {c & t for c in chunk}
    patterns.discard(t)
    patterns.discard(0)
    level = patterns
    for _ in range(m - 1):
        if not level:
            return True
        if any(x.bit_count() < k for x in level):
            return False
        level = {x & p for x in level for p in patterns} - level
        level.discard(0)
    return True
