"""Loss Metric of LDA (Tamersoy 2011, Section IV.2.6, Definitions 4-8).

Reading of Definition 4 (chosen, and checked against every worked example):
``A^Delta`` counts **0 for a value that has not been generalized** and the
number of leaves under it for a generalized value.  So replacing an original
value by a strict ancestor ``g`` costs ``leaves(g) / |A|``, replacing a value
by itself costs 0, and suppression (replacing by the root) costs 1.  This is
the only reading under which all of these hold at once:

* Example 4: ``[33-34] -> [33-36]`` costs ``(4 - 2) / 8 = 0.25`` (a generalized
  value counts its leaves);
* the alignment example of Section IV.3.1: suppressing a pair costs 1 for ICD
  and 1 for Age; ages 36 and 37 aligned to ``[33-40]`` cost ``1 * 2 = 2``;
  35 and 36 aligned to ``[35-36]`` cost ``2/8 * 2 = 0.5`` (the standard
  reading, where a leaf counts 1, would give 0.25);
* Example 5 / Figure 7: 401.1 and 401.9 generalized to 401 cost ``1 + 1``.

Generalizing an already generalized value ``v`` further to ``g`` costs
``(leaves(g) - leaves(v)) / |A|``, so that losses telescope.  The root is
always a generalized value (it carries nothing), so a code outside the ICD
hierarchy, released as ``*`` from the start, costs 1.

Definitions 7-8 sum over the pairs of the anonymized trajectory and divide by
its length.  We read the anonymized trajectory as the original one with every
pair replaced by what it became, a suppressed pair by (root, root)
(Definition 3), so the sum runs over the original pairs, the length is the
original length, and a fully suppressed dataset scores ILM = ALM = 1, the
"worst possible" of Section IV.4.2.  These figures are unweighted; the
weights only steer A-GS.
"""

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
