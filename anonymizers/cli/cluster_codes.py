"""``python -m anonymizers cluster-codes``: MedCo code clustering (Zoveralli, section 2).

Reads ``patient_id,code`` rows, writes ``{"clusters": [["code", ...], ...]}``
and prints the clustering metrics as JSON on stdout.  Clustering draws no
random number (HAC and the frequency split are deterministic): no ``--seed``.

``--code-system`` (icd9cm, the default, or icd10cm), ``--drop-unknown``,
``--mixed`` and ``--gem`` check the codes as every command reading codes does
(``anonymizers.io.clean_codes``): an unknown code exits 2 naming its row, or
is dropped and counted.  Codes keep the input's spelling: ``dummies`` matches
the clusters against its own input, cleaned the same way.  The printed
metrics say how many rows were dropped or mapped.
"""

from __future__ import annotations

import json

from anonymizers.cli.options import add_config_options, config_from_args
from anonymizers.dummies import ClusterConfig, cluster_codes
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    write_json,
)


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--output", required=True, help="clusters JSON to write")
    add_config_options(parser, ClusterConfig)
    add_code_system_arguments(parser)


def run(args) -> int:
    config = config_from_args(ClusterConfig, args)
    clean = read_codes(args.input, ["patient_id", "code"], args)
    result = cluster_codes(clean.table, config)
    write_json({"clusters": result.clusters}, args.output)
    print(json.dumps({**result.metrics, **clean.metrics(args.code_system)}, indent=1))
    return 0
