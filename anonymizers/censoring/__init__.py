"""GCCens: censoring of repeated diagnosis codes under k-map (Tamersoy 2011,
Chapter III).  ``gccens(sample, population, GCCensConfig(k, caps, seed))``."""

from anonymizers.censoring.config import GCCensConfig
from anonymizers.censoring.gccens import GCCensResult, Step, gccens, preprocess
from anonymizers.censoring.index import PopulationIndex
from anonymizers.censoring.metrics import cul, distribution
from anonymizers.censoring.release import release_document

__all__ = ["GCCensConfig", "GCCensResult", "PopulationIndex", "Step", "cul",
           "distribution", "gccens", "preprocess", "release_document"]
