"""``python -m anonymizers ppe``: extract a privacy policy (PPE, Algorithm 1).

Input CSV columns ``patient_id,code`` and, for ``--filter single-visit``,
``visit_id``.  Output JSON ``{"k": K, "filter": "...", "constraints": [[...]]}``
with each constraint a sorted list of codes.  The policy is re-checked by the
independent verifier before it is written; a failed check writes nothing.

``--code-system`` (icd9cm, the default, or icd10cm), ``--drop-unknown`` and
``--mixed`` validate the codes first (``anonymizers.io.clean_codes``): the
policy keeps the input's spelling of each code, so that UGACLIP matches it
against the same records, and ``metrics`` says how many rows were dropped or
mapped.  PPE itself treats codes as opaque.
"""

from __future__ import annotations

import sys

from anonymizers.cli.options import (
    add_config_options,
    add_verify_option,
    config_from_args,
)
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    write_json,
)
from anonymizers.ppe import PPEConfig, extract_policy
from anonymizers.verify.ppe import verify_policy


def add_arguments(parser) -> None:
    add_config_options(parser, PPEConfig)
    parser.add_argument("--input", required=True, help="CSV: patient_id,code[,visit_id]")
    parser.add_argument("--output", required=True, help="policy JSON to write")
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args) -> int:
    config = config_from_args(PPEConfig, args)
    required = ["patient_id", "code"] + (["visit_id"] if config.filter == "single-visit" else [])
    clean = read_codes(args.input, required, args)
    df = clean.table
    result = extract_policy(df, config, source=str(args.input))
    if args.verify:
        verdict = verify_policy(df, result.to_dict(), config.k, config.filter)
        if not verdict.ok:
            print("error: the extracted policy failed verification; nothing written:",
                  *verdict.violations, sep="\n  ", file=sys.stderr)
            return 1
    write_json({**result.to_dict(), "metrics": {**result.metrics,
                                                **clean.metrics(args.code_system)}},
               args.output)
    m = result.metrics
    print(f"ppe: {m['n_constraints']} constraints from {m['n_filtered_records']} filtered records "
          f"({m['n_patients']} patients, k={config.k}, {config.filter}) -> {args.output}; "
          f"{clean.summary()}")
    return 0
