"""DISASSOCIATION for k^m-anonymity (Loukides, Liagouris, Gkoulalas-Divanis,
Terrovitis, J Biomed Inform 2014): HORPART (Fig. 8), VERPART (Fig. 9),
refining with joint clusters and shared chunks (Fig. 10), reconstruction
(Fig. 5), ARE and MRE (Definitions 2-3), and the extensions of Section 7.

``disassociate(records, DisassociationConfig(k, m, ...))`` -> ``DisassociationResult``.
"""

from anonymizers.disassociation.algorithm import DisassociationResult, disassociate
from anonymizers.disassociation.config import DisassociationConfig
from anonymizers.disassociation.prepare import (TooFewRecords, merge_occurrences,
                                                split_occurrences)
from anonymizers.disassociation.release import (Cluster, Disassociated, RecordChunk,
                                                SharedChunk)

__all__ = ["Cluster", "Disassociated", "DisassociationConfig", "DisassociationResult",
           "RecordChunk", "SharedChunk", "TooFewRecords", "disassociate", "merge_occurrences",
           "split_occurrences"]
