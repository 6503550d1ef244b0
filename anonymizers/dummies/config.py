"""Parameters of MedCo code clustering and dummy generation (Zoveralli, sections 2-3)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from anonymizers.errors import ParameterError

LINKAGES = ("complete", "average", "single")


@dataclass(frozen=True)
class ClusterConfig:
    """How codes are grouped into clusters whose frequencies will be flattened.

    Parameters
    ----------
    min_anonymity_set : int
        ``A`` >= 1, the minimum anonymity set of section 2: the least number of
        codes a cluster may hold (codes of equal frequency inside a cluster
        cannot be told apart, so the smallest cluster bounds the anonymity).
        When the data holds fewer than ``A`` codes, all codes form one cluster
        and the result is flagged (``metrics["anonymity_set_met"] is False``).
    n_clusters : int or None, default None
        How many frequency clusters to form (Fig. 7 uses 2 and 3).  It is lowered
        to ``n_codes // A`` when more clusters could not all hold ``A`` codes.
        ``None`` asks for that maximum, the most clusters the anonymity set allows.
        The report's runs use 2-3 (Fig. 7); on skewed data the maximum can be
        the costliest choice (demo claims, A = 20: real ratio 9.29 with 100
        clusters, 2.66 with 5; benchmarks/medco.md).
    distance_threshold : float, default 0.5
        Jaccard distance (1 - Jaccard index over patients) at which the HAC
        dendrogram of section 2 is cut into groups of correlated codes; in
        [0, 1].  With the default, codes of one group share at least half of
        their patients (for complete linkage, every pair of them does).
    linkage : {'complete', 'average', 'single'}, default 'complete'
        Linkage of the hierarchical agglomerative clustering on Jaccard
        distances (the report does not name one).
    merge_overflowing : bool, default False
        Section 4 (future work): merge clusters whose filling would raise
        one above another's ideal height (``merge.py``).  Off by default: the
        report only suggests it, and it trades a larger release for larger
        anonymity sets (on the demo claims the ratio about doubled).
    """

    min_anonymity_set: int
    n_clusters: int | None = None
    distance_threshold: float = 0.5
    linkage: str = "complete"
    merge_overflowing: bool = False

    def __post_init__(self):
        _positive_int("min_anonymity_set", self.min_anonymity_set)
        if self.n_clusters is not None:
            _positive_int("n_clusters", self.n_clusters)
        t = self.distance_threshold
        if not isinstance(t, numbers.Real) or isinstance(t, bool) or not 0 <= float(t) <= 1:
            raise ParameterError("distance_threshold", "must be a number between 0 and 1 "
                                 f"(a Jaccard distance), got {t!r}")
        object.__setattr__(self, "distance_threshold", float(t))
        if not isinstance(self.merge_overflowing, bool):
            raise ParameterError("merge_overflowing",
                                 f"must be true or false, got {self.merge_overflowing!r}")
        if self.linkage not in LINKAGES:
            raise ParameterError("linkage",
                                 f"must be one of {list(LINKAGES)}, got {self.linkage!r}")


@dataclass(frozen=True)
class DummyConfig:
    """How dummy patients are generated (water-filling of section 3).

    There is no filling order (Fig. 7) and no round limit: all clusters are
    planned at once and generation provably ends (``generate``).

    Parameters
    ----------
    seed : int
        Seed (>= 0) of the ``numpy.random.Generator`` behind every random
        choice: code shuffling, source patients, collision repair, pseudonyms.
    repair_passes : int, default 30
        Reshuffling passes of the collision-fixing routine (section 3.2) per
        batch before the exact search or the drop of a colliding dummy.
    pseudonym_key : bytes or None, default None
        Secret key of the pseudonym permutation (``anonymizers.pseudonyms``):
        with it the permutation cannot be drawn again from the seed alone.
        Not shown in the config's repr.
    """

    seed: int
    repair_passes: int = 30
    pseudonym_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        if not _is_int(self.seed) or self.seed < 0:
            raise ParameterError("seed", f"must be a non-negative integer, got {self.seed!r}")
        _positive_int("repair_passes", self.repair_passes)


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _positive_int(name: str, value) -> None:
    if not _is_int(value) or value < 1:
        raise ParameterError(name, f"must be an integer of at least 1, got {value!r}")
