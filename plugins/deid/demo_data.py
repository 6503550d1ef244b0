"""Fill the source schema with synthetic DE-SynPUF-shaped claims (COPY per chunk)."""

from __future__ import annotations

from anonymizers.synthetic import SyntheticConfig, generate
from deid.synpuf_loader import copy_frame
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
            for table, frame in chunk.items():
                copy_frame(conn, f"source.{table}", frame)
                counts[table] += len(frame)
    return counts
