"""``python -m anonymizers ugaclip``: UGACLIP generalization and suppression.

Input CSV ``patient_id,code``; a privacy policy JSON written by ``ppe``; a
utility policy given as a JSON file or a bundled name (``pnas2010``,
``pnas2010-k5``, ...).  Output JSON ``{"k", "items", "suppressed", "records",
"metrics"}`` with fresh pseudonyms as patient ids, drawn under the key of
``--pseudonym-key-file`` or under a fresh key nobody keeps
(``anonymizers.cli.options``; ``metrics["pseudonyms"]`` says which);
``--seed`` (recorded in ``metrics``) draws the rest (the local search, the
relative-error queries).  The release is re-checked by the independent
verifier first; a failed check writes nothing.
"""

from __future__ import annotations

import sys

from anonymizers.cli.options import (
    add_config_options,
    add_pseudonym_key_option,
    add_verify_option,
    config_from_args,
    pseudonym_key,
)
from anonymizers.errors import ParameterError
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    read_json,
    write_json,
)
from anonymizers.level_policies import level_policy
from anonymizers.policies import named_level
from anonymizers.ppe import policy_from_dict
from anonymizers.ugaclip import UGACLIPConfig, load_utility_policy, ugaclip
from anonymizers.ugaclip.policy import bundled
from anonymizers.verify.ugaclip import verify_release


def add_arguments(parser) -> None:
    add_config_options(parser, UGACLIPConfig)
    parser.add_argument("--privacy-policy", required=True, help="policy JSON from `ppe`")
    parser.add_argument("--utility-policy", required=True,
                        help="JSON file, a hierarchy level of the code system "
                             "(icd9-level-1/2/3, icd10-level-1/2/3), or one of: "
                             f"{', '.join(bundled())} (ICD-9-CM lists); an ICD-9-CM "
                             "level or list applies to ICD-10-CM data through --gem")
    parser.add_argument("--strip-dots", action="store_true",
                        help="remove dots from the utility policy's codes (493.00 -> 49300)")
    parser.add_argument("--input", required=True, help="CSV: patient_id,code")
    parser.add_argument("--output", required=True, help="release JSON to write")
    add_pseudonym_key_option(parser)
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args) -> int:
    key = pseudonym_key(args)
    config = config_from_args(UGACLIPConfig, args, code_system=args.code_system,
                              pseudonym_key=key.key)
    policy = policy_from_dict(read_json(args.privacy_policy), source=str(args.privacy_policy))
    if config.k > policy.k:
        raise ParameterError("k", f"the privacy policy was extracted with k={policy.k}, so it "
                             f"does not list combinations held by {policy.k}..{config.k - 1} "
                             f"patients; run ppe with --k {config.k}")
    clean = read_codes(args.input, ["patient_id", "code"], args)
    df = clean.table
    utility = _utility_policy(args, df["code"].unique())
    result = ugaclip(df, policy.constraints, utility, config, source=str(args.input))
    release = result.to_dict()
    release["metrics"].update(seed=config.seed, pseudonyms=key.drawn,
                              **clean.metrics(args.code_system))
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
          f"utility constraints satisfied ({m['utility_constraints']['codes_in_no_constraint']} "
          f"codes in none) -> {args.output}; {clean.summary()}")
    return 0


def gem_carries(args) -> bool:
    """Whether ``--gem`` may carry the utility policy: a level of the other code
    system (see ``disassociate.gem_carries``), or a bundled list on ICD-10-CM
    data (the bundled lists hold ICD-9-CM codes; a policy file is read as it is)."""
    named = named_level(args.utility_policy)
    if named is None:
        return args.code_system == "icd10cm" and args.utility_policy in bundled()
    return named[0] != args.code_system


def _utility_policy(args, codes):
    """A hierarchy level over ``codes`` (``anonymizers.level_policies``), or a listed policy
    (checked against the code system; the bundled ICD-9-CM lists, like ICD-9's
    levels, are carried into ICD-10-CM through ``--gem``)."""
    levels = level_policy(args.utility_policy, codes, args.code_system, args.gem)
    if levels is not None:
        return levels
    if args.code_system == "icd9cm":
        return load_utility_policy(args.utility_policy, strip_dots=args.strip_dots)
    mapping = None
    if args.gem and gem_carries(args):
        from anonymizers.codesystems import gem_forward
        from anonymizers.io import read_gem

        mapping = gem_forward(read_gem(args.gem))
    return load_utility_policy(args.utility_policy, strip_dots=args.strip_dots,
                               code_system=args.code_system, mapping=mapping)
