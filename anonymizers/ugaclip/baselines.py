"""The two methods the SI sets UGACLIP against (Loukides et al., PNAS 2010): ``aclip`` (no utility
guidance, no suppression) and ``suppression_only`` (after Xu et al., KDD 2008).
Readings chosen and why: docs/methods/ugaclip.md#ugaclip-baselines."""

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
    """ACLIP (docs/methods/ugaclip.md#ugaclip-baselines).  Utility constraints reported are none."""
    return run_method(_AclipRun, df, privacy_policy, [], config, hierarchy, source)


def suppression_only(df, privacy_policy, config: UGACLIPConfig, hierarchy=None,
                     source: str = "input") -> UGACLIPResult:
    """Suppression-only baseline after Xu et al.
    (docs/methods/ugaclip.md#ugaclip-baselines)."""
    return run_method(_SuppressionRun, df, privacy_policy, [], config, hierarchy, source)
