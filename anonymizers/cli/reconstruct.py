"""``python -m anonymizers reconstruct``: draw one dataset from a
disassociated release (Fig. 5 of Loukides et al. 2014) as ``patient_id,code``."""

from __future__ import annotations

from anonymizers.disassociation import Disassociated
from anonymizers.disassociation.reconstruct import (DEFAULT_ITEM_SUPPORT, DEFAULT_LINKING,
                                                    ITEM_SUPPORT, LINKING, reconstruct)
from anonymizers.io import read_json


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="JSON written by 'disassociate'")
    parser.add_argument("--seed", type=int, required=True, help="seed of the draw")
    parser.add_argument("--output", required=True, help="CSV file to write")
    parser.add_argument("--item-support", choices=ITEM_SUPPORT, default=DEFAULT_ITEM_SUPPORT,
                        help="how many records get an item-chunk code: one record (one, "
                        "default: the consistent rule that answers counts best), uniform in "
                        "1..min(|P|, k-1) (below_k), or uniform in 1..|P| (cluster, Fig. 5)")
    parser.add_argument("--linking", choices=LINKING, default=DEFAULT_LINKING,
                        help="which records get the subrecords and item codes of a cluster: "
                        "those holding the codes the release shows them co-occurring with "
                        "(association, default: better on counts of several codes, sometimes "
                        "worse on constraints matched by any of their codes), or records drawn "
                        "at random (random)")


def run(args) -> int:
    release = Disassociated.from_json(read_json(args.input), source=args.input)
    records = reconstruct(release, seed=args.seed, item_support=args.item_support,
                          linking=args.linking)
    records.to_csv(args.output, index=False)
    print(f"{records['patient_id'].nunique()} records, {len(records)} rows -> {args.output} "
          f"(item-chunk codes: {records.attrs['item_support']}, "
          f"linking: {records.attrs['linking']})")
    return 0
