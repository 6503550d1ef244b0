"""``python -m anonymizers disassociate``: DISASSOCIATION for k^m-anonymity
(Loukides et al. 2014) on a ``patient_id,code`` CSV, written as JSON.

Exit codes: 0 written; 1 ``--verify`` failed or another error; 2 the input has
fewer than ``k`` records, so no release can keep k^m-anonymity (one line on
stderr, no file written)."""

from __future__ import annotations

import json
import sys

from anonymizers.disassociation import DisassociationConfig, TooFewRecords, disassociate
from anonymizers.io import read_table, write_json
from anonymizers.policies import load_policy


def add_arguments(parser) -> None:
    parser.add_argument("--k", type=int, required=True, help="k of k^m-anonymity (>= 2)")
    parser.add_argument("--m", type=int, required=True, help="codes an attacker knows (1-5)")
    parser.add_argument("--utility-policy", metavar="JSON",
                        help='utility constraints, JSON [["code", ...], ...]')
    parser.add_argument("--max-cluster-size", type=int,
                        help="HORPART's maxClusterSize (default 2k)")
    parser.add_argument("--max-joint-clusters", type=int,
                        help="most clusters one joint cluster may join (default: no bound)")
    parser.add_argument("--refine-window", type=int,
                        help="join clusters only within windows of this many consecutive "
                        "clusters (default: one window, the whole dataset)")
    parser.add_argument("--no-refine", action="store_true",
                        help="skip refining (no joint clusters or shared chunks)")
    parser.add_argument("--repeated-codes", action="store_true",
                        help="read records as multisets: the i-th copy of a code becomes "
                        "code#i (Section 7.1)")
    parser.add_argument("--sensitive-codes", metavar="CODES", default="",
                        help="comma-separated codes kept in item chunks (Section 7.2)")
    parser.add_argument("--seed", type=int, required=True, help="seed of the shuffles")
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--output", required=True, help="JSON file to write")
    parser.add_argument("--verify", action="store_true",
                        help="check Guarantee 1 on the result; write nothing if it fails")


def run(args) -> int:
    records = read_table(args.input, ["patient_id", "code"])
    policy = load_policy(args.utility_policy) if args.utility_policy else None
    sensitive = [c.strip() for c in args.sensitive_codes.split(",") if c.strip()]
    config = DisassociationConfig(
        k=args.k, m=args.m, max_cluster_size=args.max_cluster_size, utility_policy=policy,
        refine=not args.no_refine, max_joint_clusters=args.max_joint_clusters,
        refine_window=args.refine_window,
        seed=args.seed, repeated_codes=args.repeated_codes, sensitive_codes=sensitive)
    try:
        result = disassociate(records, config)
    except TooFewRecords as exc:  # nothing can be released: say so, write nothing
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.verify:
        from anonymizers.verify.disassociation import verify_disassociation
        verdict = verify_disassociation(records, result.to_json(), sensitive_codes=sensitive,
                                        repeated_codes=args.repeated_codes)
        print(json.dumps(verdict.as_dict()))
        if not verdict.ok:
            return 1
    write_json(result.to_json(), args.output)
    print(json.dumps(result.metrics))
    return 0
