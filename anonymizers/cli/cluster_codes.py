"""``python -m anonymizers cluster-codes``: MedCo code clustering (Zoveralli, section 2).

Reads ``patient_id,code`` rows, writes ``{"clusters": [["code", ...], ...]}``
and prints the clustering metrics as JSON on stdout.  Clustering draws no
random number (HAC and the frequency split are deterministic): no ``--seed``.
"""

from __future__ import annotations

import json

from anonymizers.cli.options import add_config_options, config_from_args
from anonymizers.dummies import ClusterConfig, cluster_codes
from anonymizers.io import read_table, write_json


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--output", required=True, help="clusters JSON to write")
    add_config_options(parser, ClusterConfig)


def run(args) -> int:
    config = config_from_args(ClusterConfig, args)
    df = read_table(args.input, ["patient_id", "code"])
    result = cluster_codes(df, config)
    write_json({"clusters": result.clusters}, args.output)
    print(json.dumps(result.metrics, indent=1))
    return 0
