"""``python -m anonymizers lda``: LDA on a ``patient_id,code,age[,service_date]`` CSV.

Writes ``{"k": K, "records": [{"patient_id": ..., "trajectory": [[code, age], ...]}],
"metrics": {...}}``.  Patient ids in the output are fresh pseudonyms; the map
back to the input ids is written only if ``--map`` names a file (keep it
private).  ``--verify`` re-checks the release with the independent verifier
and fails (exit 3) if it does not hold.  An input that cannot give a release
keeping anything (no patient, fewer than k, or only ``('*', '*')`` pairs)
exits 2 with one line, and writes nothing.

``--code-system`` names the codes' system (icd9cm, the default, or
icd10cm): codes are normalised and validated against it before LDA runs
(an unknown code exits 2 naming its row, or is dropped and counted with
``--drop-unknown``), and LDA generalizes them through its tree.  An optional
``code_version`` column gives each row's system as CCW's flag ('9', '0');
``--mixed`` refuses or maps rows of the other system (``anonymizers.io.clean_codes``).
"""

from __future__ import annotations

import sys

import pandas as pd

from anonymizers.io import (CODE_VERSION, add_code_system_arguments, clean_codes, read_table,
                            write_json)
from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.framework import ICD_DOMAINS, NothingToRelease
from anonymizers.longitudinal.trajectories import OPTIONAL, REQUIRED


def add_arguments(parser) -> None:
    parser.add_argument("--k", type=int, required=True, help="privacy level k (>= 1)")
    parser.add_argument("--w-icd", type=float, default=0.5, help="ICD loss weight (default 0.5)")
    parser.add_argument("--w-age", type=float, default=0.5, help="Age loss weight (default 0.5)")
    parser.add_argument("--alignment", choices=["a-gs", "baseline"], default="a-gs",
                        help="alignment used to cluster and anonymize (default a-gs)")
    parser.add_argument("--icd-domain", choices=list(ICD_DOMAINS), default="data",
                        help="what |A| of the loss metric counts for ICD: the data's distinct "
                             "codes (default) or every code of the code system's tree")
    add_code_system_arguments(parser)
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed (default: fresh entropy, not reproducible)")
    parser.add_argument("--input", required=True, help="CSV: patient_id,code,age[,service_date]")
    parser.add_argument("--output", required=True, help="release JSON to write")
    parser.add_argument("--map", default=None,
                        help="optional CSV for the pseudonym -> patient_id map (private)")
    parser.add_argument("--verify", action="store_true",
                        help="re-check the release with the independent verifier")


def run(args) -> int:
    source = str(args.input)
    clean = clean_codes(read_table(args.input, REQUIRED, OPTIONAL + [CODE_VERSION]), source,
                        args.code_system, args.drop_unknown, args.mixed, args.gem)
    pairs = clean.table
    config = LDAConfig(k=args.k, w_icd=args.w_icd, w_age=args.w_age, alignment=args.alignment,
                       seed=args.seed, icd_domain=args.icd_domain, code_system=args.code_system)
    try:
        result = lda(pairs, config, source=source)
    except NothingToRelease as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result.metrics.update(clean.metrics(args.code_system))
    write_json(release_json(result), args.output)
    if args.map:
        result.pseudonym_map.to_csv(args.map, index=False)
    if args.verify:
        from anonymizers.verify.longitudinal import verify_lda
        verdict = verify_lda(result.records, result.pseudonym_map, pairs, args.k,
                             code_system=args.code_system)
        print(f"verifier: {'ok' if verdict.ok else 'FAILED'} ({verdict.checked} patients)",
              file=sys.stderr)
        for line in verdict.violations:
            print(f"  {line}", file=sys.stderr)
        if not verdict.ok:
            return 3
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
