"""What MedCo clustering and dummy generation return, and how generation fails."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from anonymizers.errors import AnonymizerError, InputError


@dataclass(frozen=True)
class ClusterResult:
    """Code clusters of section 2.

    ``clusters`` partitions the input's codes (strings, sorted inside a
    cluster; clusters in ascending order of their highest code frequency).
    ``correlated_groups`` lists the groups of two or more codes that the HAC
    cut found correlated.  ``metrics`` holds sizes, the achieved anonymity set
    and the theoretical ratio of Fig. 7.
    """

    clusters: list[list[str]]
    correlated_groups: list[list[str]]
    metrics: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DummyResult:
    """Release with dummies (section 3).

    ``released`` has columns ``patient_id, code`` for real and dummy patients
    under fresh pseudonyms, rows in pseudonym order (the pseudonyms are a random
    permutation, so position reveals nothing).  ``dummy_map`` (private) has
    one row per released pseudonym: ``pseudonym, is_dummy, source_patient_id``
    (for a real patient, its own id; for a dummy, the real patient it was made
    from).  ``metrics`` holds the ratios of Fig. 7 and the collision counts.
    """

    released: pd.DataFrame
    dummy_map: pd.DataFrame
    metrics: dict = field(default_factory=dict)


class NoReleaseError(InputError):
    """The input admits no release: no dummies flatten every cluster within 1.

    Raised only on a proof (an infeasible integer program that relaxes, never
    tightens, what a release needs; see ``anonymizers.dummies.generate``), so
    nothing is released rather than an empty or unflattened table.
    """

    def __init__(self, problem: str):
        super().__init__("input", problem)


class DummyGenerationError(AnonymizerError):
    """Generation stopped without a proof that no release exists.

    ``reason == 'stalled'``: after closing the size profiles whose dummies
    could not be made new, no plan was left; ``'solver_time_limit'``: the
    integer program of the plan was not decided in time.  ``cluster`` is a cluster still
    not flat; ``partial_dummies`` lists (source_patient_id, frozenset of
    codes) of the dummies made so far, for diagnosis only.
    """

    def __init__(self, message: str, reason: str, cluster: list[str],
                 partial_dummies: list[tuple[object, frozenset]]):
        self.reason = reason
        self.cluster = cluster
        self.partial_dummies = partial_dummies
        super().__init__(message)
