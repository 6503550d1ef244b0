"""``python -m anonymizers cluster-codes``: MedCo code clustering (Zoveralli, section 2).

Reads ``patient_id,code`` rows, writes ``{"clusters": [["code", ...], ...]}``
and prints the clustering metrics as JSON on stdout.
"""

from __future__ import annotations

import json

from anonymizers.dummies import ClusterConfig, cluster_codes
from anonymizers.dummies.config import LINKAGES
from anonymizers.io import read_table, write_json


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--output", required=True, help="clusters JSON to write")
    parser.add_argument("--min-anonymity-set", type=int, required=True,
                        help="least number of codes per cluster (A)")
    parser.add_argument("--n-clusters", type=int, default=None,
                        help="frequency clusters to form (default: as many as A allows)")
    parser.add_argument("--distance-threshold", type=float, default=0.5,
                        help="Jaccard distance cutting the HAC dendrogram (default 0.5)")
    parser.add_argument("--linkage", choices=LINKAGES, default="complete",
                        help="HAC linkage (default complete)")
    parser.add_argument("--merge-overflowing", action="store_true",
                        help="merge clusters whose filling overflows each other "
                             "(section 4's future work; off by default)")


def run(args) -> int:
    config = ClusterConfig(min_anonymity_set=args.min_anonymity_set, n_clusters=args.n_clusters,
                           distance_threshold=args.distance_threshold, linkage=args.linkage,
                           merge_overflowing=args.merge_overflowing)
    df = read_table(args.input, ["patient_id", "code"])
    result = cluster_codes(df, config)
    write_json({"clusters": result.clusters}, args.output)
    print(json.dumps(result.metrics, indent=1))
    return 0
