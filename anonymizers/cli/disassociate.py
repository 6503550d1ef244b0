"""``python -m anonymizers disassociate``: DISASSOCIATION for k^m-anonymity
(Loukides et al. 2014) on a ``patient_id,code`` CSV, written as JSON.

Guarantee 1 is checked on the result by the independent verifier before
anything is written (``--no-verify`` skips it).  The verdict and the metrics
(with the seed) are printed as JSON.

Exit codes: 0 written; 1 the verification failed (nothing written) or another
error; 2 the input has fewer than ``k`` records, so no release can keep
k^m-anonymity (one line on stderr, no file written)."""

from __future__ import annotations

import json
import sys

from anonymizers.cli.options import (
    add_config_options,
    add_verify_option,
    config_from_args,
)
from anonymizers.disassociation import DisassociationConfig, TooFewRecords, disassociate
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    write_json,
)
from anonymizers.level_policies import level_policy
from anonymizers.policies import load_policy, named_level


def add_arguments(parser) -> None:
    add_config_options(parser, DisassociationConfig)
    parser.add_argument("--utility-policy", metavar="JSON|LEVEL",
                        help='utility constraints, JSON [["code", ...], ...], or a hierarchy '
                             'level of the code system (icd9-level-1/2/3, icd10-level-1/2/3); '
                             'an ICD-9-CM level applies to ICD-10-CM data through --gem')
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--output", required=True, help="JSON file to write")
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args) -> int:
    clean = read_codes(args.input, ["patient_id", "code"], args)
    records = clean.table
    policy = _utility_policy(args.utility_policy, records["code"].unique(), args.code_system,
                             args.gem)
    config = config_from_args(DisassociationConfig, args, utility_policy=policy)
    try:
        result = disassociate(records, config)
    except TooFewRecords as exc:  # nothing can be released: say so, write nothing
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.verify:
        from anonymizers.verify.disassociation import verify_disassociation
        verdict = verify_disassociation(records, result.to_json(),
                                        sensitive_codes=sorted(config.sensitive_codes),
                                        repeated_codes=config.repeated_codes)
        print(json.dumps(verdict.as_dict()))
        if not verdict.ok:
            return 1
    write_json(result.to_json(), args.output)
    print(json.dumps({**result.metrics, "seed": config.seed, **clean.metrics(args.code_system)}))
    return 0


def gem_carries(args) -> bool:
    """Whether ``--gem`` may carry the utility policy: a level of the other code
    system (an ICD-9-CM level on ICD-10-CM data is carried; the other way round
    ``level_policy`` refuses, naming the level to use)."""
    named = named_level(args.utility_policy or "")
    return named is not None and named[0] != args.code_system


def _utility_policy(name: str | None, codes, code_system: str, gem: str | None):
    """None, a hierarchy level over ``codes`` (``anonymizers.level_policies``), or a JSON
    file's constraints."""
    if not name:
        return None
    levels = level_policy(name, codes, code_system, gem)
    return load_policy(name) if levels is None else levels
