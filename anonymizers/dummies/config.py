"""Parameters of MedCo code clustering and dummy generation (Zoveralli, sections 2-3)."""

from __future__ import annotations

from dataclasses import dataclass

from anonymizers.declare import param, parameters, pseudonym_key, validate

LINKAGES = ("complete", "average", "single")
FREQUENCY_STEPS = ("least_ratio", "ward")


@parameters
@dataclass(frozen=True)
class ClusterConfig:
    """How codes are grouped into clusters whose frequencies will be flattened."""

    min_anonymity_set: int = param(
        kind="int", minimum=1,
        doc="A, the minimum anonymity set of section 2: the least number of codes a cluster "
        "may hold (codes of equal frequency inside a cluster cannot be told apart, so the "
        "smallest cluster bounds the anonymity).  When the data holds fewer than A codes, "
        "all codes form one cluster and the result is flagged (metrics['anonymity_set_met'] "
        "is False).")
    n_clusters: int | None = param(
        None, kind="int", minimum=1, nullable=True,
        doc="How many frequency clusters to form (Fig. 7 uses 2 and 3).  It is lowered to "
        "n_codes // A when more clusters could not all hold A codes.  None asks for that "
        "maximum, the most clusters the anonymity set allows.  The report's runs use 2-3 "
        "(Fig. 7); on skewed data the maximum can be the costliest choice (demo claims, "
        "A = 20: real ratio 9.29 with 100 clusters, 2.66 with 5; benchmarks/medco.md).")
    distance_threshold: float = param(
        0.5, kind="number", minimum=0, maximum=1, check=lambda name, t: float(t),
        doc="Jaccard distance (1 - Jaccard index over patients) at which the HAC dendrogram "
        "of section 2 is cut into groups of correlated codes.  With the default, codes of "
        "one group share at least half of their patients (for complete linkage, every pair "
        "of them does).")
    linkage: str = param("complete", kind="str", choices=LINKAGES,
                         doc="Linkage of the hierarchical agglomerative clustering on Jaccard "
                         "distances (the report does not name one).")
    frequency_step: str = param(
        "least_ratio", kind="str", choices=FREQUENCY_STEPS,
        doc="How step 2 of section 2 clusters the correlated groups by frequency (the report "
        "does not name a method).  'least_ratio' (default): contiguous runs of the groups "
        "sorted by top frequency, each of at least A codes, that need the fewest dummy "
        "occurrences to flatten (exact dynamic programming); it needs far fewer dummies (MEPS "
        "A=150: ratio 8.03 against 12.40 with 'ward').  'ward': Ward's agglomeration on each "
        "group's mean frequency, then codes moved into clusters under A.  "
        "See docs/methods/medco.md#dummies-clustering.")
    merge_overflowing: bool = param(
        False, kind="bool",
        doc="Section 4 (future work): merge clusters whose filling would raise one above "
        "another's ideal height (merge.py).  Off by default: the report only suggests it, "
        "and it trades a larger release for larger anonymity sets (on the demo claims the "
        "ratio about doubled).")

    def __post_init__(self):
        validate(self)


@parameters
@dataclass(frozen=True)
class DummyConfig:
    """How dummy patients are generated (water-filling of section 3).

    There is no filling order (Fig. 7) and no round limit: all clusters are
    planned at once and generation provably ends (``generate``).
    """

    seed: int = param(kind="int", minimum=0,
                      doc="Seed of the numpy Generator behind every random choice: code "
                      "shuffling, source patients, collision repair, pseudonyms.")
    repair_passes: int = param(30, kind="int", minimum=1,
                               doc="Reshuffling passes of the collision-fixing routine "
                               "(section 3.2) per batch before the exact search or the drop "
                               "of a colliding dummy.")
    pseudonym_key: bytes | None = pseudonym_key()

    def __post_init__(self):
        validate(self)
