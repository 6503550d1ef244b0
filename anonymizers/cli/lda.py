"""``python -m anonymizers lda``: LDA on a ``patient_id,code,age[,service_date]`` CSV.

Writes ``{"k": K, "records": [{"patient_id": ..., "trajectory": [[code, age], ...]}],
"metrics": {...}}``.  Patient ids in the output are fresh pseudonyms drawn
under the key of ``--pseudonym-key-file``, or under a fresh key nobody keeps
(``anonymizers.cli.options``; ``metrics["pseudonyms"]`` says which), not
from ``--seed``, which draws the clustering (none with ``--lookahead``) and is
recorded in ``metrics``,
as are the opt-in deviations from the thesis used (``deviations_from_thesis``);
the map back to the input ids is written only if ``--map`` names a file
(keep it private).  The independent
verifier re-checks the release before anything is written (``--no-verify``
skips it); a failed check writes nothing (exit 1).  An input that cannot give a release
keeping anything (no patient, fewer than k, or only ``('*', '*')`` pairs)
exits 2 with one line, and writes nothing.

``--code-system`` names the codes' system (icd9cm, the default, or
icd10cm): codes are normalised and validated against it before LDA runs
(an unknown code exits 2 naming its row, or is dropped and counted with
``--drop-unknown``), and LDA generalizes them through its tree.  An optional
``code_version`` column gives each row's system as CCW's flag ('9', '0');
``--mixed`` refuses or maps rows of the other system (``anonymizers.io.clean_codes``).
One summary line on stdout says how many rows were dropped or mapped.

The CSV's rows are the trajectories' pairs as given (a multiset); the
pipeline's release step gives each patient's distinct (code, age) pairs
(docs/methods/lda.md#longitudinal-trajectories), so to get the pipeline's
release from the same claims, drop repeated (patient_id, code, age) rows first.
"""

from __future__ import annotations

import sys

import pandas as pd

from anonymizers.cli.options import (
    add_config_options,
    add_pseudonym_key_option,
    add_verify_option,
    config_from_args,
    pseudonym_key,
)
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    write_json,
)
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.framework import NothingToRelease
from anonymizers.longitudinal.trajectories import OPTIONAL, REQUIRED


def add_arguments(parser) -> None:
    add_config_options(parser, LDAConfig)
    add_code_system_arguments(parser)
    parser.add_argument("--input", required=True, help="CSV: patient_id,code,age[,service_date]")
    parser.add_argument("--output", required=True, help="release JSON to write")
    parser.add_argument("--map", default=None,
                        help="optional CSV for the pseudonym -> patient_id map (private)")
    add_pseudonym_key_option(parser)
    add_verify_option(parser)


def run(args) -> int:
    key = pseudonym_key(args)
    source = str(args.input)
    clean = read_codes(args.input, REQUIRED, args, OPTIONAL, keep_spelling=False)
    pairs = clean.table
    config = config_from_args(LDAConfig, args, code_system=args.code_system,
                              pseudonym_key=key.key)
    try:
        result = lda(pairs, config, source=source)
    except NothingToRelease as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result.metrics.update(clean.metrics(args.code_system))
    result.metrics.update(seed=config.seed, pseudonyms=key.drawn,
                          deviations_from_thesis=config.deviations())
    if args.verify:
        from anonymizers.verify.longitudinal import verify_lda
        verdict = verify_lda(result.records, result.pseudonym_map, pairs, config.k,
                             code_system=config.code_system)
        print(f"verifier: {'ok' if verdict.ok else 'FAILED'} ({verdict.checked} patients)",
              file=sys.stderr)
        for line in verdict.violations:
            print(f"  {line}", file=sys.stderr)
        if not verdict.ok:
            print("error: the release failed verification; nothing written", file=sys.stderr)
            return 1
    write_json(release_json(result), args.output)
    if args.map:
        result.pseudonym_map.to_csv(args.map, index=False)
    print(f"lda: {len(result.patients)} patients (k={config.k}) -> {args.output}; "
          f"{clean.summary()}")
    return 0


def release_json(result) -> dict:
    """The release as the JSON document the CLI writes."""
    groups = {p: g for p, g in result.records.groupby("patient_id", sort=False)}
    records = []
    for p in result.patients:
        g = groups.get(p, pd.DataFrame(columns=["code", "age"]))
        records.append({"patient_id": str(p),
                        "trajectory": [[c, a] for c, a in zip(g["code"], g["age"])]})
    return {"k": int(result.metrics["k"]), "records": records, "metrics": result.metrics}
