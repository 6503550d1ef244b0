"""The two methods the SI sets UGACLIP against (Loukides et al., PNAS 2010):

* ``aclip`` -- ACLIP, "UGACLIP without utility guidance": the SI says it
  "works by applying generalization in a way that minimizes information loss
  and without taking utility constraints into account" and "performs no
  suppression".  Read as Algorithm 2 with one utility constraint holding
  every code: any code may be generalized with any other (by least IL), so
  line 12 and line 17 are never needed (an item of all codes is held by every
  non-empty record).
* ``suppression_only`` -- the approach of Xu et al. (KDD 2008) the SI
  contrasts with: no generalization; while some privacy constraint is
  unprotected (held by fewer than k records), suppress the code contained in
  the greatest number of unprotected constraints (ties: the rarer code, then
  vocabulary order).  The SI's unprotected "sets of items of minimal size"
  are read as the PPE constraints, so both methods protect the same policy.

Both return a ``UGACLIPResult`` the UGACLIP verifier checks unchanged.
"""

from __future__ import annotations

import numpy as np

from anonymizers.ugaclip.algorithm import Run, run_method
from anonymizers.ugaclip.config import UGACLIPConfig, UGACLIPResult


class _AclipRun(Run):
    def __init__(self, records, constraints, utility, k, weights):
        from anonymizers.ugaclip.policy import UtilityPolicy
        everything = UtilityPolicy.from_lists([records.codes.tolist()], ["all codes"])
        super().__init__(records, constraints, everything, k, weights)


class _SuppressionRun(Run):
    def execute(self) -> None:
        s = self.state
        while True:
            self._refresh()
            open_ids = np.flatnonzero(~self.satisfied)
            if open_ids.size == 0:
                return
            self.counts["outer_iterations"] += 1
            rows = self.padded[open_ids]
            live = rows[~s.suppressed[rows]]
            hits = np.bincount(live, minlength=s.n_codes)[: s.n_codes]
            c = int(np.lexsort((np.arange(s.n_codes), s.code_support, -hits))[0])
            self.trace.append(("suppress", c))
            self._changed(s.suppress(c), merged=False)
            self.counts["code_suppressions"] += 1


def aclip(df, privacy_policy, config: UGACLIPConfig, hierarchy=None,
          source: str = "input") -> UGACLIPResult:
    """ACLIP (module docstring).  Utility constraints reported are none."""
    return run_method(_AclipRun, df, privacy_policy, [], config, hierarchy, source)


def suppression_only(df, privacy_policy, config: UGACLIPConfig, hierarchy=None,
                     source: str = "input") -> UGACLIPResult:
    """Suppression-only baseline after Xu et al. (module docstring)."""
    return run_method(_SuppressionRun, df, privacy_policy, [], config, hierarchy, source)
