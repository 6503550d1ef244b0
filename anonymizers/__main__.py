"""``anonymizers <command> ...`` (or ``python -m anonymizers``): every method
on CSV/JSON files.

Each command lives in ``anonymizers/cli/<module>.py`` and defines
``add_arguments(parser)`` and ``run(args) -> int``; a method's options come
from its config declaration (``anonymizers.cli.options``).  Every command that
draws random numbers requires ``--seed N`` and records it in its metrics;
every command with an independent verifier runs it unless ``--no-verify``.

Exit status: 0 done; 2 the command line or an input file is unusable (bad
usage, a malformed input, an output folder that is missing), nothing was
computed or written; 1 a parameter was refused or the release failed its
verification.  Every error is one line on stderr, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from anonymizers.cli import check_output_paths, refuse_unread_gem
from anonymizers.errors import AnonymizerError, InputError

# an error message is one line and short, whatever a module put in it
MESSAGE_LIMIT = 500

COMMANDS = {
    "ppe": ("ppe", "extract a privacy policy (PPE, Loukides et al. 2010, Alg. 1)"),
    "cluster-codes": ("cluster_codes", "cluster codes for MedCo dummy generation"),
    "dummies": ("dummies", "add MedCo dummy patients (water-filling)"),
    "ugaclip": ("ugaclip", "UGACLIP generalization and suppression"),
    "disassociate": ("disassociate", "disassociation for k^m-anonymity"),
    "reconstruct": ("reconstruct", "draw a dataset from a disassociated one"),
    "gccens": ("gccens", "GCCens censoring of repeated codes under k-map"),
    "lda": ("lda", "LDA for longitudinal (ICD, age) records"),
    "hhp": ("hhp", "HHP claims release: screening, truncation, recoding (El Emam 2012)"),
    "attack-successive": ("attack", "attack successive releases of a method (issue 25)"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="anonymizers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
        check_output_paths(args)
        refuse_unread_gem(args, module)
        return module.run(args) or 0
    except InputError as exc:
        _error(exc)
        return 2
    except AnonymizerError as exc:
        _error(exc)
        return 1
    except OSError as exc:  # e.g. the disk filled while writing the output
        _error(f"{exc.filename or 'I/O'}: {exc.strerror or type(exc).__name__}")
        return 1


def _error(message) -> None:
    """Print ``message`` as one line on stderr, cut at MESSAGE_LIMIT characters."""
    line = " ".join(str(message).split())
    if len(line) > MESSAGE_LIMIT:
        line = line[:MESSAGE_LIMIT] + " [...]"
    print(f"error: {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
