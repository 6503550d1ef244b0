"""Fill the source schema with synthetic DE-SynPUF-shaped claims (COPY per chunk)."""

from __future__ import annotations

from anonymizers.synthetic import SyntheticConfig, generate
from deid.pgcopy import copy_frame
from deid.warehouse import connect, ensure_schemas

TABLES = ("beneficiary_summary", "inpatient_claims", "outpatient_claims", "carrier_claims")


def source_counts() -> dict[str, int]:
    with connect() as conn, conn.cursor() as cur:
        out = {}
        for t in TABLES:
            cur.execute(f"SELECT count(*) FROM source.{t}")
            out[t] = cur.fetchone()[0]
        return out


def load_synthetic(n_members: int, seed: int, replace: bool = False) -> dict[str, int]:
    """Generate and COPY ``n_members`` members in one transaction.

    With ``replace`` the source tables are emptied first; otherwise rows are added.
    """
    ensure_schemas()
    counts = dict.fromkeys(TABLES, 0)
    with connect() as conn:
        with conn.cursor() as cur:
            if replace:
                cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in TABLES))
        for chunk in generate(SyntheticConfig(n_members=n_members, seed=seed)):
            with conn.cursor() as cur:
                for table, frame in chunk.items():
                    copy_frame(cur, f"source.{table}", frame)
                    counts[table] += len(frame)
    return counts


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m deid.demo_data", description=__doc__)
    parser.add_argument("--members", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2008)
    parser.add_argument("--if-empty", action="store_true",
                        help="load only when the source schema holds no beneficiary")
    parser.add_argument("--replace", action="store_true", help="empty the source tables first")
    args = parser.parse_args(argv)
    ensure_schemas()
    if args.if_empty and source_counts()["beneficiary_summary"]:
        print("source schema already holds claims: nothing loaded")
        return 0
    print(load_synthetic(args.members, args.seed, replace=args.replace))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
