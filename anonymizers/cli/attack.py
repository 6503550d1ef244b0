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
"""

from __future__ import annotations

import json
import sys

from anonymizers.errors import InputError
from anonymizers.io import read_json, read_table
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


def run(args) -> int:
    if len(args.releases) < 2:
        raise InputError("--releases", "an attack across releases needs two or more")
    if args.truth is not None and len(args.truth) != len(args.releases):
        raise InputError("--truth", f"{len(args.truth)} files for {len(args.releases)} releases")
    attack = attack_for(args.method)
    releases, truth, kwargs = _inputs(args)
    report = attack(releases, truth, **kwargs)
    print(json.dumps(report, default=_plain))
    verdict = report.get("breached")
    if verdict is None:
        print("warning: the attack reports no verdict ('breached')", file=sys.stderr)
        return 0
    return 1 if verdict else 0


def _inputs(args) -> tuple[list, list | None, dict]:
    """(releases, truth, keyword arguments) in the shape the method's attack takes."""
    method, truth = args.method, None
    if method == "medco":
        releases = [read_table(r, ["patient_id", "code"]) for r in args.releases]
        if args.truth:
            truth = [read_table(t, ["pseudonym", "is_dummy"], ["source_patient_id"])
                     for t in args.truth]
        return releases, truth, {"min_codes": args.min_codes}
    releases = [read_json(r) for r in args.releases]
    kwargs = {"k": args.k}
    if method == "disassociation":
        truth = _tables(args.truth, ["patient_id", "code"])
        kwargs["m"] = args.m
    elif method == "ugaclip":
        truth = _tables(args.truth, ["patient_id", "code"])
        kwargs["m"] = args.m
        if args.privacy_policy:
            kwargs["constraints"] = [c for p in args.privacy_policy
                                     for c in read_json(p).get("constraints", [])]
    elif method == "lda":
        truth = _tables(args.truth, ["patient_id", "code", "age"], ["service_date"])
        kwargs["maps"] = _tables(args.maps, ["pseudonym", "patient_id"])
    elif method == "gccens":
        truth = _tables(args.truth, ["patient_id", "original_id"])
        if args.population is None:
            raise InputError("--population", "gccens is judged against its population")
        kwargs["population"] = read_table(args.population, ["patient_id", "code"], ["count"])
    return releases, truth, kwargs


def _tables(paths, required, optional=()):
    return None if paths is None else [read_table(p, required, list(optional)) for p in paths]


def _plain(x):
    if hasattr(x, "item"):
        return x.item()
    return str(x)

