"""``python -m anonymizers <command> ...``: every method on CSV/JSON files.

Each command lives in ``anonymizers/cli/<module>.py`` and defines
``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from anonymizers.errors import AnonymizerError

COMMANDS = {
    "ppe": ("ppe", "extract a privacy policy (PPE, Loukides et al. 2010, Alg. 1)"),
    "cluster-codes": ("cluster_codes", "cluster codes for MedCo dummy generation"),
    "dummies": ("dummies", "add MedCo dummy patients (water-filling)"),
    "ugaclip": ("ugaclip", "UGACLIP generalization and suppression"),
    "disassociate": ("disassociate", "disassociation for k^m-anonymity"),
    "reconstruct": ("reconstruct", "draw a dataset from a disassociated one"),
    "gccens": ("gccens", "GCCens censoring of repeated codes under k-map"),
    "lda": ("lda", "LDA for longitudinal (ICD, age) records"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anonymizers", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        try:
            modules[name] = importlib.import_module(f"anonymizers.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"anonymizers.cli.{module}":
                raise
            modules[name] = None
            continue
        modules[name].add_arguments(p)
    args, rest = parser.parse_known_args(argv)
    module = modules[args.command]
    if module is None:
        print(f"error: command {args.command!r} is not implemented yet", file=sys.stderr)
        return 2
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return module.run(args) or 0
    except AnonymizerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
