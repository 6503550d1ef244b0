"""Fill the source schema with synthetic DE-SynPUF-shaped claims (COPY per chunk),
or, with ``--layout rif --out DIR``, write them as CCW RIF files
(``anonymizers.synthetic_rif``), or, with ``--layout csv --out DIR``, as the
command line's input CSVs (``anonymizers.synthetic_csv``), without touching
the warehouse."""

from __future__ import annotations

from deid.admin_setup import RIF_TABLES
from deid.admin_setup import SOURCE_TABLES as TABLES
from deid.pgcopy import copy_frame
from deid.warehouse import connect, ensure_schemas

from anonymizers.synthetic import SyntheticConfig, generate


def source_counts() -> dict[str, int]:
    with connect() as conn, conn.cursor() as cur:
        out = {}
        for t in TABLES:
            cur.execute(f"SELECT count(*) FROM source.{t}")
            out[t] = cur.fetchone()[0]
        return out


def source_code_system(sample: int = 1000) -> str | None:
    """The code system of the source claims' diagnoses: the one of
    ``icd9cm``/``icd10cm`` that every distinct ``icd9_dgns_cd_1`` of (up to
    ``sample``) carrier and inpatient claims is valid in; None if the tables
    are empty or neither holds them all (the DE-SynPUF columns hold code
    strings of either system)."""
    from anonymizers.codesystems import CODE_SYSTEMS, is_valid

    with connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT DISTINCT icd9_dgns_cd_1 FROM (SELECT icd9_dgns_cd_1 FROM "
                    "source.carrier_claims WHERE icd9_dgns_cd_1 IS NOT NULL LIMIT %s) c "
                    "UNION SELECT icd9_dgns_cd_1 FROM (SELECT icd9_dgns_cd_1 FROM "
                    "source.inpatient_claims WHERE icd9_dgns_cd_1 IS NOT NULL LIMIT %s) i",
                    (sample, sample))
        codes = [r[0] for r in cur.fetchall()]
    fits = [s for s in CODE_SYSTEMS if codes and is_valid(codes, s).all()]
    return fits[0] if len(fits) == 1 else None


def load_synthetic(n_members: int, seed: int, replace: bool = False,
                   code_system: str = "icd9cm") -> dict[str, int]:
    """Generate and COPY ``n_members`` members in one transaction, with
    diagnoses in ``code_system`` (``icd9cm`` or ``icd10cm``).

    With ``replace`` the source tables, the RIF layout's included, are emptied
    first (the extract reads both); otherwise rows are added.
    """
    ensure_schemas()
    counts = dict.fromkeys(TABLES, 0)
    with connect() as conn:
        with conn.cursor() as cur:
            if replace:
                cur.execute("TRUNCATE " + ", ".join(f"source.{t}" for t in (*TABLES, *RIF_TABLES)))
        for chunk in generate(SyntheticConfig(n_members=n_members, seed=seed,
                                                  code_system=code_system)):
            with conn.cursor() as cur:
                for table, frame in chunk.items():
                    copy_frame(cur, f"source.{table}", frame)
                    counts[table] += len(frame)
    return counts


def write_files(parser, args) -> int:
    """``--layout rif`` (CCW RIF files) or ``--layout csv`` (``python -m
    anonymizers``'s input CSVs): the generated members written to ``--out``."""
    from anonymizers.synthetic_csv import write_cli_inputs
    from anonymizers.synthetic_rif import write_rif

    if not args.out:
        parser.error(f"--layout {args.layout} needs --out DIR")
    config = SyntheticConfig(n_members=args.members, seed=args.seed,
                             code_system=args.code_system)
    write = write_rif if args.layout == "rif" else write_cli_inputs
    print(write(config, args.out, first_year=args.first_year))
    return 0


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.demo_data", description=__doc__)
    parser.add_argument("--members", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2008)
    parser.add_argument("--if-empty", action="store_true",
                        help="load only when the source schema holds no beneficiary")
    parser.add_argument("--replace", action="store_true", help="empty the source tables first")
    parser.add_argument("--code-system", choices=["icd9cm", "icd10cm"], default="icd9cm",
                        help="diagnosis code system of the generated claims")
    parser.add_argument("--layout", choices=["synpuf", "rif", "csv"], default="synpuf",
                        help="synpuf: load the warehouse's source schema; rif: write CCW RIF "
                             "files to --out; csv: write the command line's input CSVs "
                             "(records, trajectories, members, claims) to --out")
    parser.add_argument("--out", help="directory of the files (--layout rif or csv)")
    parser.add_argument("--first-year", type=int, default=None,
                        help="first service year of RIF or CSV files (default: 2016 for icd10cm, "
                             "2008 for icd9cm)")
    args = parser.parse_args(argv)
    if args.layout in ("rif", "csv"):
        return write_files(parser, args)
    ensure_schemas()
    if args.if_empty and source_counts()["beneficiary_summary"]:
        print("source schema already holds claims: nothing loaded")
        return 0
    print(load_synthetic(args.members, args.seed, replace=args.replace,
                         code_system=args.code_system))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
