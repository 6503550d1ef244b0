"""Draw one dataset ``D'`` from a disassociated dataset, as a data recipient
would (Section 3.2, Fig. 5).

Section 3.2: a reconstructed record combines one subrecord from every record
chunk of its cluster "plus any subset of diagnosis codes from C_T", and the
recipient "can only assume that [the number of records holding an item-chunk
code] ranges from 1 to |P_i|".  The paper gives no distribution; we draw:

- record chunks: an independent random permutation of each chunk's
  subrecords onto the cluster's records;
- shared chunks: a random permutation of the subrecords onto the records of
  the joined clusters;
- item chunks: for each code, a count drawn uniformly from ``1 .. cap`` and
  that many distinct records of the cluster drawn uniformly, where ``cap``
  depends on ``item_support``:

  - ``"cluster"`` (default): ``cap = |P|``, Section 3.2's statement.  It is
    the only choice consistent with Fig. 5, where 834.0 is on 4 of the 5
    records of P2 although k = 3.
  - ``"below_k"``: ``cap = min(|P|, k - 1)``, for a recipient who knows that
    VERPART sends a code to the item chunk only when its support is below
    ``k`` (Fig. 9, line 4; untrue for the sensitive codes of Section 7.2).
  - ``"one"``: every item-chunk code on exactly one record, the least the
    release allows; close to the truth on sparse data where most item-chunk
    codes have support 1 in their cluster, and biased low otherwise.

Records get fresh pseudonyms.  A record that draws no code at all has no row
in the long table (it would answer no COUNT query).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonymizers.disassociation.release import Disassociated
from anonymizers.errors import ParameterError
from anonymizers.pseudonyms import fresh

ITEM_SUPPORT = ("cluster", "below_k", "one")


def reconstruct(release: Disassociated, seed: int | None = None,
                item_support: str = "cluster") -> pd.DataFrame:
    """A long table ``patient_id, code`` drawn from ``release`` with the
    generator seeded by ``seed``."""
    if item_support not in ITEM_SUPPORT:
        raise ParameterError("item_support", f"must be one of {ITEM_SUPPORT}, "
                             f"got {item_support!r}")
    rng = np.random.default_rng(seed)
    starts = np.cumsum([0] + [c.size for c in release.clusters])
    rec: list[np.ndarray] = []
    code: list[list[str]] = []
    for ci, cluster in enumerate(release.clusters):
        base = starts[ci]
        for chunk in cluster.record_chunks:
            _place(chunk.subrecords, base + rng.permutation(cluster.size), rec, code)
        cap = {"cluster": cluster.size, "one": 1}.get(item_support,
                                                      min(cluster.size, release.k - 1))
        for c in cluster.item_chunk:
            count = int(rng.integers(1, max(cap, 1) + 1))
            rec.append(base + rng.choice(cluster.size, size=count, replace=False))
            code.append([c] * count)
    for shared in release.shared_chunks:
        members = np.concatenate([np.arange(starts[i], starts[i + 1])
                                  for i in shared.clusters] or [np.zeros(0, dtype=np.int64)])
        _place(shared.subrecords, rng.permutation(members), rec, code)
    names = fresh(int(starts[-1]), rng)
    rows = np.concatenate(rec) if rec else np.zeros(0, dtype=np.int64)
    codes = [c for part in code for c in part]
    out = pd.DataFrame({"patient_id": names[rows] if len(rows) else np.array([], dtype=object),
                        "code": np.array(codes, dtype=object)})
    out = out.drop_duplicates().sort_values(["patient_id", "code"], kind="stable")
    return out.reset_index(drop=True)


def _place(subrecords, targets: np.ndarray, rec: list, code: list) -> None:
    """Give subrecord ``j`` to record ``targets[j]``."""
    lens = np.fromiter((len(s) for s in subrecords), dtype=np.int64, count=len(subrecords))
    rec.append(np.repeat(targets, lens))
    code.append([c for s in subrecords for c in s])
