"""``python -m anonymizers gccens``: GCCens censoring under k-map (Tamersoy 2011, Ch. III).

Reads the sample and the population as CSV (``patient_id,code``, one row per
occurrence, or with a ``count`` column), writes the release as JSON with fresh
pseudonyms, after the independent verifier has passed it (``--no-verify``
skips it).  The pseudonyms are drawn under the key of ``--pseudonym-key-file``
or under a fresh key nobody keeps (``anonymizers.cli.options``; the metrics'
``pseudonyms`` says which), not from ``--seed`` (recorded in the metrics).  The key linking
pseudonyms to source ids is written only if ``--key`` asks for it: it is
identifying and must never be released.

``--code-system`` (icd9cm, the default, or icd10cm), ``--drop-unknown`` and
``--mixed`` validate the codes of both tables first (``anonymizers.io.
clean_codes``, keeping the input's spelling, which ``--caps`` uses too); the
release's metrics say how many rows were dropped or mapped in each table.
GCCens itself treats codes as opaque.
"""

from __future__ import annotations

import argparse
import sys

from anonymizers.censoring import GCCensConfig, gccens, release_document
from anonymizers.cli.options import (
    add_config_options,
    add_pseudonym_key_option,
    add_verify_option,
    config_from_args,
    pseudonym_key,
)
from anonymizers.errors import InputError
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    read_json,
    write_json,
)
from anonymizers.verify.censoring import verify_gccens

COLUMNS = ["patient_id", "code"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser, GCCensConfig)
    parser.add_argument("--population", required=True, metavar="CSV",
                        help="the population the sample was drawn from")
    parser.add_argument("--input", required=True, metavar="CSV", help="the sample to release")
    parser.add_argument("--output", required=True, metavar="JSON", help="the release")
    caps = parser.add_mutually_exclusive_group(required=True)
    caps.add_argument("--cap", type=int, metavar="N", help="one cap for every code")
    caps.add_argument("--caps", metavar="JSON", help='a cap per code: {"250": 2, ...}')
    caps.add_argument("--caps-from-sample", action="store_true",
                      help="each code's cap is its largest count in a sample record")
    parser.add_argument("--key", metavar="CSV", default=None,
                        help="also write the pseudonym -> source id key here "
                             "(identifying: never release it)")
    add_pseudonym_key_option(parser)
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args: argparse.Namespace) -> int:
    pseudonyms = pseudonym_key(args)
    sample, sample_clean = _read(args.input, args)
    population, population_clean = _read(args.population, args)
    config = config_from_args(GCCensConfig, args, caps=_caps(args),
                              pseudonym_key=pseudonyms.key)
    result, key = gccens(sample, population, config)
    verdict = verify_gccens(result.patients, result.records, key, sample, population,
                            config.k, result.final_caps) if args.verify else None
    if verdict is not None and not verdict.ok:
        print("error: the release failed verification and was not written:\n  "
              + "\n  ".join(verdict.violations), file=sys.stderr)
        return 1
    document = release_document(result)
    document["metrics"].update({"code_system": args.code_system,
                                "sample_codes": _counts(sample_clean, args),
                                "population_codes": _counts(population_clean, args),
                                "seed": config.seed, "pseudonyms": pseudonyms.drawn})
    document["verification"] = None if verdict is None else verdict.as_dict()
    write_json(document, args.output)
    if args.key:
        key.to_csv(args.key, index=False)
    m = result.metrics
    print(f"released {m['n_records']} records k-mapped (k={m['k']}) to "
          f"{m['n_population']} population records; mean CUL {_fmt(m['cul_mean'])}, "
          f"{m['records_modified']:.1%} of records censored by the loop")
    print(f"codes: sample {sample_clean.summary()}; population {population_clean.summary()}")
    return 0


def _read(path, args):
    """A table with its codes checked, and its ``CleanCodes`` (what checking
    them dropped or mapped)."""
    clean = read_codes(path, COLUMNS, args, ["count"])
    return clean.table, clean


def _counts(clean, args) -> dict:
    """The metrics of one table's cleaning (the code system is said once)."""
    counts = clean.metrics(args.code_system)
    del counts["code_system"]
    return counts


def _caps(args):
    if args.caps_from_sample:
        return None
    if args.cap is not None:
        return args.cap
    caps = read_json(args.caps)
    if not isinstance(caps, dict):
        raise InputError(args.caps, 'caps must be a JSON object such as {"250": 2, "401": 0}')
    return caps


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


__all__ = ["add_arguments", "run"]
