"""``python -m anonymizers dummies``: MedCo dummy patients (Zoveralli, section 3).

Reads ``patient_id,code`` rows and the clusters JSON of ``cluster-codes``;
writes the release (``patient_id,code`` under fresh pseudonyms) and the
private map (``pseudonym,is_dummy,source_patient_id``).  The independent
verifier checks the release first: when it fails, nothing is written and
the exit status is 1.  Metrics and the verdict are printed as JSON.  An
input that admits no release (``NoReleaseError``) writes nothing, prints
one error line and exits with status 2.
"""

from __future__ import annotations

import json
import sys

from anonymizers.dummies import DummyConfig, NoReleaseError, generate_dummies
from anonymizers.errors import InputError
from anonymizers.io import read_json, read_table
from anonymizers.verify.dummies import verify_dummies


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--clusters", required=True, help="clusters JSON from cluster-codes")
    parser.add_argument("--seed", type=int, required=True, help="seed of every random choice")
    parser.add_argument("--output", required=True, help="released CSV to write (patient_id,code)")
    parser.add_argument("--dummy-map", required=True,
                        help="private CSV to write (pseudonym,is_dummy,source_patient_id)")
    parser.add_argument("--min-anonymity-set", type=int, default=None,
                        help="also verify that every cluster has at least this many codes")


def run(args) -> int:
    config = DummyConfig(seed=args.seed)
    clusters = _read_clusters(args.clusters)
    df = read_table(args.input, ["patient_id", "code"])
    try:
        result = generate_dummies(df, clusters, config)
    except NoReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verdict = verify_dummies(df, result.released, result.dummy_map, clusters,
                             args.min_anonymity_set)
    print(json.dumps({"metrics": result.metrics, "verdict": verdict.as_dict()}, indent=1))
    if not verdict.ok:
        print("error: the release failed verification; nothing was written", file=sys.stderr)
        return 1
    result.released.to_csv(args.output, index=False)
    result.dummy_map.to_csv(args.dummy_map, index=False)
    return 0


def _read_clusters(path: str) -> list:
    data = read_json(path)
    if not isinstance(data, dict) or "clusters" not in data:
        raise InputError(path, 'expected a JSON object {"clusters": [["code", ...], ...]}')
    return data["clusters"]
