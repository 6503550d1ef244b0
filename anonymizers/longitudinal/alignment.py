"""Alignment of two trajectories (Tamersoy 2011, IV.3.1): Baseline (Algorithm 2) and A-GS
(Algorithm 3), its DP computed one anti-diagonal at a time; ties go DIAG, then LEFT, then UP.
Readings chosen and why: docs/methods/lda.md#longitudinal-alignment."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from anonymizers.longitudinal.hierarchies import EncodedTree
from anonymizers.longitudinal.loss import combined_lm, lm

DIAG, LEFT, UP = 1, 2, 3  # r-matrix symbols: generalize, suppress y_j, suppress x_h


@dataclass(frozen=True)
class Trees:
    icd: EncodedTree
    age: EncodedTree


@dataclass(frozen=True)
class Pairs:
    """A trajectory as node ids in the two trees, with generalized flags."""

    icd: np.ndarray
    age: np.ndarray
    icd_gen: np.ndarray
    age_gen: np.ndarray

    @classmethod
    def original(cls, icd, age) -> "Pairs":
        """An input trajectory: only root values (codes outside the
        hierarchy, ages outside the domain) count as generalized."""
        icd, age = np.asarray(icd, dtype=np.int64), np.asarray(age, dtype=np.int64)
        return cls(icd, age, icd == 0, age == 0)

    def __len__(self) -> int:
        return len(self.icd)


@dataclass(frozen=True)
class Aligned:
    """Result of aligning X and Y: the anonymized trajectory, its ILM and ALM
    as the algorithm accumulates them, and which (h, j) were generalized
    together (0-based, in order).  ``i``, ``a``, ``r`` are A-GS's matrices."""

    trajectory: Pairs
    ilm: float
    alm: float
    matches: np.ndarray
    i: np.ndarray | None = None
    a: np.ndarray | None = None
    r: np.ndarray | None = None


def _merge(trees: Trees, x: Pairs, y: Pairs, h: np.ndarray, j: np.ndarray) -> Pairs:
    """The pairs of LCAs for matched x_h, y_j (steps 5 / 30)."""
    icd = trees.icd.lca(x.icd[h], y.icd[j])
    age = trees.age.lca(x.age[h], y.age[j])
    icd_gen = x.icd_gen[h] | y.icd_gen[j] | (icd != x.icd[h]) | (icd != y.icd[j]) | (icd == 0)
    age_gen = x.age_gen[h] | y.age_gen[j] | (age != x.age[h]) | (age != y.age[j]) | (age == 0)
    return Pairs(icd, age, icd_gen, age_gen)


def _suppress(tree: EncodedTree, nodes, gen) -> np.ndarray:
    return lm(tree, nodes, gen, np.zeros_like(nodes))


def baseline(x: Pairs, y: Pairs, trees: Trees, ilm_x: float = 0.0,
             alm_x: float = 0.0) -> Aligned:
    """Algorithm 2 (Baseline)."""
    s = min(len(x), len(y))
    idx = np.arange(s)
    _, ci = combined_lm(trees.icd, x.icd[:s], x.icd_gen[:s], y.icd[:s], y.icd_gen[:s])
    _, ca = combined_lm(trees.age, x.age[:s], x.age_gen[:s], y.age[:s], y.age_gen[:s])
    z = x if len(x) > len(y) else y
    si = _suppress(trees.icd, z.icd[s:], z.icd_gen[s:])
    sa = _suppress(trees.age, z.age[s:], z.age_gen[s:])
    ilm = _running_sum(ilm_x, ci, si)
    alm = _running_sum(alm_x, ca, sa)
    return Aligned(_merge(trees, x, y, idx, idx), ilm, alm, np.stack([idx, idx], axis=1))


def _running_sum(start: float, *parts) -> float:
    total = start
    for part in parts:
        for v in part.tolist():  # left to right, as steps 7-8 and 12-13 add them
            total += v
    return float(total)


def ags(x: Pairs, y: Pairs, trees: Trees, w_icd: float, w_age: float,
        ilm_x: float = 0.0, alm_x: float = 0.0, x_members: int = 1) -> Aligned:
    """Algorithm 3 (A-GS), returning the matrices i, a, r as well.

    ``x_members`` > 1 is the opt-in member-weighted reading
    (``LDAConfig.member_weighted``, not the thesis'): every loss on X's side
    (generalizing or suppressing x_h) counts once per trajectory X stands for."""
    m, n = len(x), len(y)
    gi = weighted_lm(trees.icd, x.icd[:, None], x.icd_gen[:, None], y.icd[None, :],
                     y.icd_gen[None, :], x_members) * w_icd
    ga = weighted_lm(trees.age, x.age[:, None], x.age_gen[:, None], y.age[None, :],
                     y.age_gen[None, :], x_members) * w_age
    sxi = _suppress(trees.icd, x.icd, x.icd_gen) * w_icd * x_members
    sxa = _suppress(trees.age, x.age, x.age_gen) * w_age * x_members
    syi = _suppress(trees.icd, y.icd, y.icd_gen) * w_icd
    sya = _suppress(trees.age, y.age, y.age_gen) * w_age
    i, a, r = _init_matrices(m, n, ilm_x, alm_x, sxi, sxa, syi, sya)
    for d in range(2, m + n + 1):
        h = np.arange(max(1, d - n), min(m, d - 1) + 1)
        j = d - h
        cost = ((i[h - 1, j - 1] + gi[h - 1, j - 1], a[h - 1, j - 1] + ga[h - 1, j - 1]),
                (i[h, j - 1] + syi[j - 1], a[h, j - 1] + sya[j - 1]),
                (i[h - 1, j] + sxi[h - 1], a[h - 1, j] + sxa[h - 1]))
        total = [c + g for c, g in cost]
        diag = total[0] <= np.minimum(total[1], total[2])
        left = ~diag & (total[1] <= total[2])
        i[h, j] = np.where(diag, cost[0][0], np.where(left, cost[1][0], cost[2][0]))
        a[h, j] = np.where(diag, cost[0][1], np.where(left, cost[1][1], cost[2][1]))
        r[h, j] = np.where(diag, DIAG, np.where(left, LEFT, UP))
    hs, js = _traceback(r, m, n)
    return Aligned(_merge(trees, x, y, hs, js), float(i[m, n]), float(a[m, n]),
                   np.stack([hs, js], axis=1), i, a, r)


def weighted_lm(tree: EncodedTree, a, a_gen, b, b_gen, a_members: int = 1) -> np.ndarray:
    """Definition 6's combined LM with ``a``'s part counted ``a_members``
    times (1: Definition 6 itself, computed exactly as ``combined_lm``)."""
    if a_members == 1:
        return combined_lm(tree, a, a_gen, b, b_gen)[1]
    anc = tree.lca(a, b)
    return lm(tree, a, a_gen, anc) * a_members + lm(tree, b, b_gen, anc)


def _init_matrices(m, n, ilm_x, alm_x, sxi, sxa, syi, sya):
    """Steps 1-12: the null row and column (suppressing prefixes)."""
    i = np.zeros((m + 1, n + 1))
    a = np.zeros((m + 1, n + 1))
    r = np.zeros((m + 1, n + 1), dtype=np.int8)
    i[:, 0] = np.cumsum(np.concatenate([[ilm_x], sxi]))
    a[:, 0] = np.cumsum(np.concatenate([[alm_x], sxa]))
    i[0, :] = np.cumsum(np.concatenate([[ilm_x], syi]))
    a[0, :] = np.cumsum(np.concatenate([[alm_x], sya]))
    r[1:, 0], r[0, 1:] = UP, LEFT
    return i, a, r


def _traceback(r: np.ndarray, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Steps 26-36: follow r from (m, n); DIAG cells become output pairs."""
    h, j, hs, js = m, n, [], []
    while h >= 1 or j >= 1:
        op = r[h, j]
        if op == DIAG:
            hs.append(h - 1)
            js.append(j - 1)
            h, j = h - 1, j - 1
        elif op == LEFT:
            j -= 1
        else:
            h -= 1
    return (np.array(hs[::-1], dtype=np.int64), np.array(js[::-1], dtype=np.int64))
