"""The common result shape of every method (issue 24): a ``Release`` holds
named tables (pandas DataFrames), metrics (with the seed the run used, None
for a method that draws no random number) and the independent verifier's
``Verdict``; ``VerificationFailed`` is what ``anonymizers.run`` raises instead
of returning a release whose verdict failed.  ``StepPlan`` is the work of a
partitioned method (disassociation, HHP) cut as its DAG runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from anonymizers.errors import AnonymizerError
from anonymizers.verify.verdict import Verdict

__all__ = ["Release", "StepPlan", "VerificationFailed", "Verdict"]


@dataclass(frozen=True)
class Release:
    """``tables`` may be published; ``private`` (pseudonym keys, dummy maps)
    links the release to the source and must never be: it is kept for the
    verifier and the custodian's audit only, like ``result`` (the method's
    own result object, which ``verify`` re-reads).  ``verdict`` is None only
    when the caller asked ``run(..., verify=False)``."""

    method: str
    tables: dict[str, pd.DataFrame]
    metrics: dict
    verdict: Verdict | None
    config: Any = field(repr=False)
    private: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    result: Any = field(default=None, repr=False, compare=False)

    @property
    def seed(self) -> int | None:
        return self.metrics.get("seed")


@dataclass(frozen=True)
class StepPlan:
    """The steps a partitioned method's DAG maps one task over: ``steps`` are
    small dicts (numbers only, never ids) in the order the DAG runs them;
    ``state`` is what every step reads (the HORPART plan, the staged claims);
    ``config`` the seeded config the steps run with (a pseudonym key drawn
    for a config without one is only here: finish with this config)."""

    method: str
    steps: tuple[dict, ...]
    state: Any = field(repr=False)
    config: Any = field(default=None, repr=False)


class VerificationFailed(AnonymizerError):
    """The independent verifier rejected a release: nothing may be published."""

    def __init__(self, method: str, verdict: Verdict):
        self.method, self.verdict = method, verdict
        super().__init__(f"{method}: the release failed verification of {verdict.property}: "
                         + "; ".join(verdict.violations))
