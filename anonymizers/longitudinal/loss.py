"""LDA's loss metric (Tamersoy 2011, IV.2.6, Definitions 4-8): an ungeneralized value costs 0, a
generalized one its leaves over |A|; ILM and ALM average over the original pairs.
Readings chosen and why: docs/methods/lda.md#longitudinal-loss."""

from __future__ import annotations

import numpy as np

from anonymizers.longitudinal.hierarchies import EncodedTree


def weight(tree: EncodedTree, nodes, generalized) -> np.ndarray:
    """``A^Delta`` of Definition 4 under the reading above (in leaves)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    gen = np.asarray(generalized, dtype=bool) | (nodes == 0)
    return np.where(gen, tree.leaves[nodes], 0)


def lm(tree: EncodedTree, frm, frm_generalized, to) -> np.ndarray:
    """Definition 4: loss of replacing node ``frm`` by its ancestor-or-self ``to``."""
    frm, to = np.asarray(frm, dtype=np.int64), np.asarray(to, dtype=np.int64)
    loss = (tree.leaves[to] - weight(tree, frm, frm_generalized)) / tree.domain
    return np.where(frm == to, 0.0, loss)


def combined_lm(tree: EncodedTree, a, a_gen, b, b_gen) -> tuple[np.ndarray, np.ndarray]:
    """Definition 6: ``(lca(a, b), LM(a, lca) + LM(b, lca))``, elementwise."""
    anc = tree.lca(a, b)
    return anc, lm(tree, a, a_gen, anc) + lm(tree, b, b_gen, anc)


def pair_loss(tree: EncodedTree, original, released) -> np.ndarray:
    """Loss of each original value given what it was released as.

    ``released`` is the node id the value ends up as, or -1 for a suppressed
    pair (Definition 3: suppression replaces it by the root).
    """
    original = np.asarray(original, dtype=np.int64)
    released = np.where(np.asarray(released) < 0, 0, released).astype(np.int64)
    return lm(tree, original, original == 0, released) + np.where(original == 0, 1.0, 0.0)


def trajectory_lm(per_pair: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Definition 7 divided by ``|T|``: mean loss of each trajectory's pairs."""
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    sums = np.bincount(owner, weights=per_pair, minlength=len(lengths))
    return np.divide(sums, lengths, out=np.zeros(len(lengths)), where=lengths > 0)


def dataset_lm(per_pair: np.ndarray, offsets: np.ndarray) -> float:
    """Definition 8: the mean over trajectories of ``LM(T) / |T|`` (0 if empty)."""
    per_traj = trajectory_lm(per_pair, offsets)
    return float(per_traj.mean()) if len(per_traj) else 0.0
