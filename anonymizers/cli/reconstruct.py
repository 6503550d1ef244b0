"""``python -m anonymizers reconstruct``: draw one dataset from a
disassociated release (Fig. 5 of Loukides et al. 2014) as ``patient_id,code``.
The seed and the rules used are printed (a reconstruction has no guarantee
of its own to verify: it is drawn from a verified release).  Its record ids
are drawn from the seed and need no key: they name records drawn from the
release, which holds no source id, so replaying them maps back to no
patient.

No ``--code-system``/``--drop-unknown``/``--mixed``: the input is a release,
not source codes.  ``disassociate`` validated and cleaned its codes (with
those options) before releasing them, and a reconstruction must draw from
the release as published: dropping or mapping a released code here would
draw a dataset the release does not describe."""

from __future__ import annotations

from anonymizers.cli.options import add_config_options, config_from_args
from anonymizers.disassociation import Disassociated
from anonymizers.disassociation.config import ReconstructConfig
from anonymizers.disassociation.reconstruct import reconstruct
from anonymizers.io import read_json


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="JSON written by 'disassociate'")
    parser.add_argument("--output", required=True, help="CSV file to write")
    add_config_options(parser, ReconstructConfig)


def run(args) -> int:
    config = config_from_args(ReconstructConfig, args)
    release = Disassociated.from_json(read_json(args.input), source=args.input)
    records = reconstruct(release, seed=config.seed, item_support=config.item_support,
                          linking=config.linking)
    records.to_csv(args.output, index=False)
    print(f"{records['patient_id'].nunique()} records, {len(records)} rows -> {args.output} "
          f"(seed {config.seed}, item-chunk codes: {records.attrs['item_support']}, "
          f"linking: {records.attrs['linking']})")
    return 0
