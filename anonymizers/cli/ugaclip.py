"""``python -m anonymizers ugaclip``: UGACLIP generalization and suppression.

Input CSV ``patient_id,code``; a privacy policy JSON written by ``ppe``; a
utility policy given as a JSON file or a bundled name (``pnas2010``,
``pnas2010-k5``, ...).  Output JSON ``{"k", "items", "suppressed", "records",
"metrics"}`` with fresh pseudonyms drawn from ``--seed`` (recorded in ``metrics``) as patient ids.  The release is
re-checked by the independent verifier first; a failed check writes nothing.
"""

from __future__ import annotations

import sys

from anonymizers.cli.options import add_config_options, add_verify_option, config_from_args
from anonymizers.errors import ParameterError
from anonymizers.io import read_json, read_table, write_json
from anonymizers.ppe import policy_from_dict
from anonymizers.ugaclip import UGACLIPConfig, load_utility_policy, ugaclip
from anonymizers.ugaclip.policy import bundled
from anonymizers.verify.ugaclip import verify_release


def add_arguments(parser) -> None:
    add_config_options(parser, UGACLIPConfig)
    parser.add_argument("--privacy-policy", required=True, help="policy JSON from `ppe`")
    parser.add_argument("--utility-policy", required=True,
                        help=f"JSON file, or one of: {', '.join(bundled())}")
    parser.add_argument("--strip-dots", action="store_true",
                        help="remove dots from the utility policy's codes (493.00 -> 49300)")
    parser.add_argument("--input", required=True, help="CSV: patient_id,code")
    parser.add_argument("--output", required=True, help="release JSON to write")
    add_verify_option(parser)


def run(args) -> int:
    config = config_from_args(UGACLIPConfig, args)
    policy = policy_from_dict(read_json(args.privacy_policy), source=str(args.privacy_policy))
    if config.k > policy.k:
        raise ParameterError("k", f"the privacy policy was extracted with k={policy.k}, so it "
                             f"does not list combinations held by {policy.k}..{config.k - 1} "
                             f"patients; run ppe with --k {config.k}")
    utility = load_utility_policy(args.utility_policy, strip_dots=args.strip_dots)
    df = read_table(args.input, ["patient_id", "code"])
    result = ugaclip(df, policy.constraints, utility, config, source=str(args.input))
    release = result.to_dict()
    release["metrics"]["seed"] = config.seed
    if args.verify:
        verdict = verify_release(df, release, policy.constraints, config.k)
        if not verdict.ok:
            print("error: the release failed verification; nothing written:",
                  *verdict.violations, sep="\n  ", file=sys.stderr)
            return 1
    write_json(release, args.output)
    m = result.metrics
    print(f"ugaclip: {m['n_records']} records, {m['n_generalized_items']} generalized items, "
          f"{m['suppressed_codes']} codes suppressed ({m['suppressed_occurrences']} occurrences), "
          f"{m['utility_constraints']['n_satisfied']}/{m['utility_constraints']['n_present']} "
          f"utility constraints satisfied -> {args.output}")
    return 0
