"""MedCo code clustering and dummy patients (Zoveralli, "Dummy generation for MedCo").

``cluster_codes(df, ClusterConfig(...))`` groups codes (section 2);
``generate_dummies(df, clusters, DummyConfig(...))`` adds dummy patients so
that the codes of each cluster have the same frequency (section 3).
"""

from anonymizers.dummies.clustering import cluster_codes
from anonymizers.dummies.config import ClusterConfig, DummyConfig
from anonymizers.dummies.generate import generate_dummies
from anonymizers.dummies.results import (ClusterResult, DummyGenerationError, DummyResult,
                                         NoReleaseError)

__all__ = ["cluster_codes", "generate_dummies", "ClusterConfig", "DummyConfig",
           "ClusterResult", "DummyResult", "DummyGenerationError", "NoReleaseError"]
