"""Atomic load of a release, with its audit row.

A run builds its tables in ``release_build`` under run-scoped names and
commits them.  The swap is one transaction: drop the previous release table,
move the new one into ``release`` under the release's name, write the
restricted rows (dummy map, key fingerprint, privacy policy), the release
history (``deid.history``: the published release, what it was checked
against, and what the next run needs of it) and the audit row.  A run that fails or is killed before that commit leaves the previous
release as it was; a leftover build table is dropped by the next run.
The audit row is opened ``running`` when the run starts (``open_audit``)
and closed once (``close_audit``): ``loaded`` in the swap's transaction,
``failed`` by the failure callback or, for a run killed before it could
say so, by ``deid.sweep``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from itertools import chain

import numpy as np
import pandas as pd

from deid import history
from deid.paths import sql_text
from deid.pgcopy import copy_frame
from deid.warehouse import connect

NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


def tokenize(codes: pd.Series, key: bytes) -> pd.Series:
    """Keyed tokens: HMAC-SHA256(key, code), first 16 hex digits, per distinct code."""
    uniq = pd.unique(codes)
    table = {c: hmac.new(key, str(c).encode(), hashlib.sha256).hexdigest()[:16] for c in uniq}
    return codes.map(table)


def table_ddl(block: str, table: str) -> str:
    """The CREATE TABLE of ``-- name: block`` in sql/release_tables.sql."""
    text = sql_text("release_tables.sql")
    m = re.search(rf"-- name: {block}\n(.*?)(?=\n-- name:|\Z)", text, re.S)
    if not m:
        raise KeyError(f"no release table block {block!r} in sql/release_tables.sql")
    stmt = "\n".join(l for l in m.group(1).splitlines() if not l.startswith("--"))
    return stmt.replace("{table}", table)


def build_name(release: str, run_id: str, block: str = "") -> str:
    """``b<hash of release and run>_<block>``: short (PostgreSQL names stop at 63)
    and distinct for two releases that share a run id."""
    tag = hashlib.sha256(f"{release}\0{run_id}".encode()).hexdigest()[:12]
    return f"b{tag}_{block}"


def release_table_names(table: str, blocks) -> dict[str, str]:
    """One table keeps the destination name; several get ``<table>_<block>``."""
    blocks = list(blocks)
    if len(blocks) == 1:
        return {blocks[0]: table}
    return {b: f"{table}_{b.split('_', 1)[-1]}" for b in blocks}


def build_all(release: str, run_id: str, table: str,
              frames: dict[str, pd.DataFrame]) -> dict[str, str]:
    """Create and fill one build table per block; returns {final name: build name}."""
    _check_name(release)
    _check_name(table)
    names = release_table_names(table, frames)
    built = {}
    with connect() as conn, conn.cursor() as cur:
        for block, frame in frames.items():
            name = build_name(release, run_id, block)
            cur.execute(f"DROP TABLE IF EXISTS release_build.{name}")
            cur.execute(table_ddl(block, f"release_build.{name}"))
            copy_frame(cur, f"release_build.{name}", frame)
            built[names[block]] = name
    return built


# Tables moved in with SET SCHEMA miss the schema's default privileges: grant
# the reader role (sql/roles.sql) explicitly, where the warehouse has it.
GRANT_READER = """DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'deid_reader') THEN
    GRANT SELECT ON {table} TO deid_reader;
  END IF;
END $$"""


def swap(release: str, run_id: str, built: dict[str, str], restricted: dict,
         audit: dict) -> None:
    """Swap the built tables in and record everything, in one transaction."""
    with connect() as conn, conn.cursor() as cur:
        swap_in(cur, release, run_id, built, restricted, audit)


def swap_in(cur, release: str, run_id: str, built: dict[str, str], restricted: dict,
            audit: dict) -> None:
    """The statements of the swap, on a cursor whose transaction the caller commits."""
    _check_name(release)
    cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (release,))
    for final, name in built.items():
        cur.execute(f"DROP TABLE IF EXISTS release.{final}")
        cur.execute(f"ALTER TABLE release_build.{name} SET SCHEMA release")
        cur.execute(f"ALTER TABLE release.{name} RENAME TO {final}")
        cur.execute(GRANT_READER.format(table=f"release.{final}"))
    _write_restricted(cur, release, run_id, restricted)
    close_audit(cur, {**audit, "release_name": release, "run_id": run_id, "outcome": "loaded"})


def _write_restricted(cur, release, run_id, restricted: dict) -> None:
    for table in ("dummy_map", "token_keys", "privacy_policies"):
        cur.execute(f"DELETE FROM restricted.{table} WHERE release_name = %s AND run_id = %s",
                    (release, run_id))
    if restricted.get("dummy_map") is not None:
        dm = restricted["dummy_map"].assign(release_name=release, run_id=run_id)
        copy_frame(cur, "restricted.dummy_map",
              dm[["release_name", "run_id", "pseudonym", "is_dummy", "made_from"]])
    if restricted.get("key_sha256"):  # the key's fingerprint (deid.secret), not the key
        cur.execute("INSERT INTO restricted.token_keys (release_name, run_id, key_sha256) "
                    "VALUES (%s, %s, %s)", (release, run_id, restricted["key_sha256"]))
    policy = restricted.get("policy")
    if policy:
        copy_frame(cur, "restricted.privacy_policies", policy_frame(policy, release, run_id))
    published = restricted.get("history")
    if published is not None:
        history.write(cur, {**published["entry"], "release_name": release, "run_id": run_id},
                      published["parts"])


def policy_frame(policy: dict, release: str, run_id: str) -> pd.DataFrame:
    """One row per (constraint, code) of a PPE policy, built column by column.
    (A tuple per row took 303 MB and 2.3 s for the 1.18 million rows of the
    113k-member benchmark; columns take 125 MB and 0.3 s.)"""
    constraints = policy["constraints"]
    sizes = np.fromiter((len(c) for c in constraints), dtype=np.int64, count=len(constraints))
    codes = np.fromiter(chain.from_iterable(constraints), dtype=object, count=int(sizes.sum()))
    return pd.DataFrame({"release_name": release, "run_id": run_id, "k": policy["k"],
                         "filter": policy["filter"],
                         "constraint_id": np.repeat(np.arange(len(constraints)), sizes),
                         "code": codes}, index=pd.RangeIndex(len(codes)))


AUDIT_COLUMNS = ("release_name", "run_id", "method", "params", "seed", "policy_versions",
                 "input_rows", "output_rows", "risk_before", "risk_after", "metrics",
                 "verdicts", "code_version", "started_at", "outcome", "error", "report_path",
                 "triggered_by", "scope", "overrides", "checked_against")
JSON_COLUMNS = {"params", "policy_versions", "risk_before", "risk_after", "metrics", "verdicts",
                "overrides", "checked_against"}


def insert_audit(cur, row: dict, then: str = "") -> None:
    values = [json.dumps(row.get(c), default=str) if c in JSON_COLUMNS else row.get(c)
              for c in AUDIT_COLUMNS]
    cur.execute(f"INSERT INTO audit.release_runs ({', '.join(AUDIT_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(AUDIT_COLUMNS))}) {then}", values)


def open_audit(row: dict) -> None:
    """The run's row, outcome ``running``; a retried first task finds it open."""
    with connect() as conn, conn.cursor() as cur:
        insert_audit(cur, {**row, "outcome": "running"}, "ON CONFLICT (release_name, run_id) "
                     "WHERE outcome = 'running' DO NOTHING")


def close_audit(cur, row: dict, keep: tuple = ()) -> bool:
    """Close the run's open row with ``row`` (``keep``: columns the open row
    knows better), or, when the run has no open row (it opened none, as
    before this row existed, or another task already closed it), add ``row``
    unless the run already has a row.  True if a row was closed or added."""
    if close_open(cur, {c: v for c, v in row.items() if c not in keep}):
        return True
    cur.execute("SELECT 1 FROM audit.release_runs WHERE release_name = %s AND run_id = %s",
                (row["release_name"], row["run_id"]))
    if cur.fetchone() is not None and row["outcome"] == "failed":
        return False  # one row per run: its first failure is the one recorded
    insert_audit(cur, row)
    return True


def close_open(cur, row: dict) -> bool:
    """Close the run's open row with the audit columns ``row`` has (the others
    keep the open row's values); False if the run has no open row."""
    closing = {c: row[c] for c in AUDIT_COLUMNS if c in row}
    cur.execute("SELECT audit.close_run(%s, %s, %s::jsonb)",
                (row["release_name"], row["run_id"], json.dumps(closing, default=str)))
    return bool(cur.fetchone()[0])


def record_failure(row: dict) -> bool:
    """Close the run's row as failed (its open row keeps its start time and the
    versions of the files the run started with)."""
    with connect() as conn, conn.cursor() as cur:
        return close_audit(cur, {**row, "outcome": "failed"},
                           keep=("started_at", "policy_versions"))


def open_runs(release: str | None = None) -> list[dict]:
    """Runs whose audit row is still open: release_name, run_id, started_at."""
    with connect(readonly=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT release_name, run_id, started_at FROM audit.release_runs "
                    "WHERE outcome = 'running' AND (%s::text IS NULL OR release_name = %s) "
                    "ORDER BY started_at", (release, release))
        return [dict(zip(("release_name", "run_id", "started_at"), r)) for r in cur.fetchall()]


def drop_stale_builds(release: str, run_id: str) -> None:
    """Drop the build tables a killed attempt of this run left behind."""
    prefix = build_name(release, run_id)
    with connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'release_build' "
                    "AND starts_with(tablename, %s)", (prefix,))
        for (name,) in cur.fetchall():
            cur.execute(f"DROP TABLE release_build.{name}")


def _check_name(release: str) -> None:
    if not NAME.match(release):
        raise ValueError(f"release name {release!r} must match {NAME.pattern}")
