"""``python -m anonymizers attack-successive``: run the comparison attack of a
method on two or more of its releases (oldest first), as an adversary who
keeps every release would (docs/threat-model-successive.md).

Prints the attack's report as one JSON object.  Exit 0 when the attack finds
no breach of the method's guarantee, 1 when it does (or another error), 2
for an unusable command line or input file.  Reports never name a patient.

What ``--truth`` holds, one file per release (the adversary's background
knowledge, or the private maps the operator holds):

- disassociation, ugaclip: the release's input CSV ``patient_id,code``;
- lda: the input CSV ``patient_id,code,age[,service_date]``, with the
  pseudonym maps of ``lda --map`` given as ``--maps``;
- gccens: the key CSV of ``gccens --key`` (``patient_id,original_id``);
  without it records are linked by equal pseudonyms; ``--population`` is
  required;
- medco: the dummy map CSV of ``dummies --dummy-map``.

``--code-system``, ``--drop-unknown``, ``--mixed`` and ``--gem`` apply to the
source tables that hold codes (``--truth`` of disassociation, ugaclip and
lda; ``--population`` of gccens), which must be cleaned as the method's
command cleaned its input (same options), or the attack would compare the
release with codes it never held: an unknown code exits 2 naming its row, or
is dropped and counted (the report's ``truth_codes``).  The releases are not
checked again: they are the output of a command that validated their codes.
"""

from __future__ import annotations

import json
import sys

from anonymizers.errors import InputError
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    read_json,
    read_table,
)
from anonymizers.successive.registry import ATTACKS, attack_for


def add_arguments(parser) -> None:
    parser.add_argument("--method", required=True, choices=sorted(ATTACKS))
    parser.add_argument("--releases", nargs="+", required=True, metavar="FILE",
                        help="release files, oldest first (JSON; CSV for medco)")
    parser.add_argument("--truth", nargs="+", metavar="CSV",
                        help="one private table per release (see above)")
    parser.add_argument("-k", "--k", type=int, help="k (default: the last release's)")
    parser.add_argument("-m", "--m", type=int,
                        help="codes the adversary knows (disassociation: default the "
                             "release's m; ugaclip without --privacy-policy)")
    parser.add_argument("--privacy-policy", nargs="+", metavar="JSON",
                        help="ugaclip: the privacy policies (ppe) of the releases; the "
                             "adversary knows a constraint its target holds")
    parser.add_argument("--maps", nargs="+", metavar="CSV", help="lda: pseudonym maps")
    parser.add_argument("--population", metavar="CSV", help="gccens: the population")
    parser.add_argument("--min-codes", type=int, default=3,
                        help="medco: records with at least this many codes are attacked")
    add_code_system_arguments(parser)


def run(args) -> int:
    if len(args.releases) < 2:
        raise InputError("--releases", "an attack across releases needs two or more")
    if args.truth is not None and len(args.truth) != len(args.releases):
        raise InputError("--truth", f"{len(args.truth)} files for {len(args.releases)} releases")
    attack = attack_for(args.method)
    releases, truth, kwargs = _inputs(args)
    cleaned = kwargs.pop("cleaned")
    report = attack(releases, truth, **kwargs)
    if cleaned:
        report["truth_codes"] = {
            "code_system": args.code_system,
            "rows_dropped_unknown_code": sum(c.dropped for c in cleaned),
            "rows_mapped_to_code_system": sum(c.mapped for c in cleaned)}
    print(json.dumps(report, default=_plain))
    verdict = report.get("breached")
    if verdict is None:
        print("warning: the attack reports no verdict ('breached')", file=sys.stderr)
        return 0
    return 1 if verdict else 0


def _inputs(args) -> tuple[list, list | None, dict]:
    """(releases, truth, keyword arguments) in the shape the method's attack takes."""
    method, truth, cleaned = args.method, None, []
    if method == "medco":
        releases = [read_table(r, ["patient_id", "code"]) for r in args.releases]
        if args.truth:
            truth = [read_table(t, ["pseudonym", "is_dummy"], ["source_patient_id"])
                     for t in args.truth]
        return releases, truth, {"min_codes": args.min_codes, "cleaned": cleaned}
    releases = [read_json(r) for r in args.releases]
    kwargs = {"k": args.k, "cleaned": cleaned}
    if method == "disassociation":
        truth = _coded(args.truth, ["patient_id", "code"], args, cleaned)
        kwargs["m"] = args.m
    elif method == "ugaclip":
        truth = _coded(args.truth, ["patient_id", "code"], args, cleaned)
        kwargs["m"] = args.m
        if args.privacy_policy:
            kwargs["constraints"] = [c for p in args.privacy_policy
                                     for c in read_json(p).get("constraints", [])]
    elif method == "lda":
        truth = _coded(args.truth, ["patient_id", "code", "age"], args, cleaned,
                       ["service_date"], keep_spelling=False)  # lda releases normalised codes
        kwargs["maps"] = _tables(args.maps, ["pseudonym", "patient_id"])
    elif method == "gccens":
        truth = _tables(args.truth, ["patient_id", "original_id"])
        if args.population is None:
            raise InputError("--population", "gccens is judged against its population")
        kwargs["population"] = _coded([args.population], ["patient_id", "code"], args, cleaned,
                                      ["count"])[0]
    return releases, truth, kwargs


def _tables(paths, required, optional=()):
    return None if paths is None else [read_table(p, required, list(optional)) for p in paths]


def _coded(paths, required, args, cleaned: list, optional=(), keep_spelling=True):
    """The tables of ``paths`` with their codes cleaned as the method's command
    cleans its input (``clean_codes``); each cleaning is appended to ``cleaned``."""
    if paths is None:
        return None
    tables = []
    for path in paths:
        clean = read_codes(path, required, args, optional, keep_spelling)
        cleaned.append(clean)
        tables.append(clean.table)
    return tables


def _plain(x):
    if hasattr(x, "item"):
        return x.item()
    return str(x)

