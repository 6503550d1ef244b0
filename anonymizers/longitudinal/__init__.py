"""LDA: k-anonymity for longitudinal (ICD, Age) records (Tamersoy 2011, Ch. IV).

``lda(pairs, LDAConfig(k=5))`` -> ``LDAResult``; see ``anonymizers.longitudinal.framework``.
"""

from anonymizers.longitudinal.framework import LDAConfig, LDAResult, lda

__all__ = ["LDAConfig", "LDAResult", "lda"]
