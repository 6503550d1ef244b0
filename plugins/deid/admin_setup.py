"""One-time warehouse setup, run by its owner: schemas, tables, roles, grants.

A release run needs only the rights of ``deid_loader`` (``sql/roles.sql``);
it creates no schema and alters no table.  Everything it needs is made here,
once, with an owner connection::

    AIRFLOW_CONN_WAREHOUSE=postgres://owner:...@host/db python -m deid.admin_setup \\
        [--loader LOGIN] [--reader LOGIN]

(or a DBA runs sql/source_schema.sql, sql/release_schema.sql and sql/roles.sql
with psql, in that order).  Running it again is harmless and brings an older
warehouse up to date.  ``--loader``/``--reader`` give existing logins their
role; ``--loader`` also hands the release tables already there to
``deid_loader``, since a run replaces its table and only an owner may.  The embedded warehouse is set up this way by ``warehouse.ensure_schemas``;
on a configured one, ``ensure_schemas`` (every run's ``prepare``) only checks,
with ``check_ready``, that this was done and that the run's login may do what
a run does, so that a missing right stops the run at its start, not at its load.
"""

from __future__ import annotations

import argparse
import sys

from psycopg2 import sql

from deid.paths import sql_text
from deid.warehouse import connect

SETUP_FILES = ("source_schema.sql", "release_schema.sql", "roles.sql")
# the DE-SynPUF tables of sql/source_schema.sql that a run reads
SOURCE_TABLES = ("beneficiary_summary", "inpatient_claims", "outpatient_claims",
                 "carrier_claims")
# the CCW RIF layout's tables (deid.rif_loader), read by the same extract
RIF_TABLES = ("rif_beneficiary", "rif_claims", "rif_diagnoses")
SCHEMAS = ("source", "release", "release_build", "restricted", "audit")
# what a run does: (schema or schema.table, privileges)
NEEDS = (*((s, ("USAGE",)) for s in SCHEMAS),
         ("release", ("CREATE",)), ("release_build", ("CREATE",)),
         *((f"source.{t}", ("SELECT",)) for t in (*SOURCE_TABLES, *RIF_TABLES)),
         *((f"restricted.{t}", ("SELECT", "INSERT", "DELETE"))
           for t in ("dummy_map", "token_keys", "privacy_policies")),
         # the published history (issue 25): append-only for the loader
         *((f"restricted.{t}", ("SELECT", "INSERT")) for t in ("release_history", "release_parts")),
         ("audit.release_runs", ("SELECT", "INSERT")))
LOCK = 8817  # one DDL at a time (concurrent tasks of the embedded warehouse)
# A run replaces a release table, which only its owner may do.  Needs a
# superuser or an owner who may SET ROLE deid_loader.
HAND_OVER = """DO $$
DECLARE t record;
BEGIN
    FOR t IN SELECT tablename FROM pg_tables
             WHERE schemaname = 'release' AND tableowner <> 'deid_loader' LOOP
        EXECUTE format('ALTER TABLE release.%I OWNER TO deid_loader', t.tablename);
    END LOOP;
END $$"""


def setup(loader: str | None = None, reader: str | None = None) -> None:
    """Create or update schemas, tables and roles in one transaction."""
    with connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        for name in SETUP_FILES:
            cur.execute(sql_text(name))
        for login, role in ((loader, "deid_loader"), (reader, "deid_reader")):
            if login:
                grant_login(cur, login, role)
        if loader:  # runs move to a loader login: it must own what earlier runs loaded
            cur.execute(HAND_OVER)


def grant_login(cur, login: str, role: str) -> None:
    """Make an existing login a ``role`` member.  A loader login acts as
    ``deid_loader`` from its first statement, so that the tables it creates
    belong to the role and another loader login can replace them."""
    cur.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(role), sql.Identifier(login)))
    if role == "deid_loader":
        cur.execute(sql.SQL("ALTER ROLE {} SET role = {}").format(
            sql.Identifier(login), sql.Literal(role)))


def missing_objects(cur) -> list[str]:
    """Schemas and tables of ``NEEDS`` that do not exist (catalog lookups,
    which need no privilege)."""
    cur.execute("SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (list(SCHEMAS),))
    found = {r[0] for r in cur.fetchall()}
    cur.execute("SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') "
                "AND n.nspname = ANY(%s)", (list(SCHEMAS),))
    found |= {r[0] for r in cur.fetchall()}
    return [name for name, _ in NEEDS if name not in found]


def missing_rights(cur) -> list[str]:
    """What the current login lacks of ``NEEDS``, and release tables it could
    not replace (a table is replaced by its owner only)."""
    lacking = []
    for name, privileges in NEEDS:
        schema, _, table = name.partition(".")
        for privilege in privileges:
            if table:  # by oid: a name lookup would fail without USAGE on the schema
                cur.execute("SELECT has_table_privilege(c.oid, %s) FROM pg_class c JOIN "
                            "pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE n.nspname = %s AND c.relname = %s", (privilege, schema, table))
            else:
                cur.execute("SELECT has_schema_privilege(%s, %s)", (schema, privilege))
            if not cur.fetchone()[0]:
                lacking.append(f"{privilege} on {name}")
    cur.execute("SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'release' "
                "AND c.relkind IN ('r', 'p') AND NOT pg_has_role(c.relowner, 'USAGE')")
    lacking += [f"ownership of release.{t} (owned by {o})" for t, o in cur.fetchall()]
    return lacking


def check_ready() -> None:
    """Raise, saying what to do, unless the warehouse is set up and the
    current login may run a release."""
    with connect(readonly=True) as conn, conn.cursor() as cur:
        missing = missing_objects(cur)
        if missing:
            raise RuntimeError(
                f"the warehouse is not set up (missing: {', '.join(missing)}): run "
                f"`python -m deid.admin_setup` once with an owner connection, or have the DBA "
                f"run sql/source_schema.sql, sql/release_schema.sql and sql/roles.sql")
        lacking = missing_rights(cur)
        cur.execute("SELECT current_user")
        user = cur.fetchone()[0]
    if lacking:
        raise RuntimeError(f"the warehouse login {user!r} cannot run a release: it lacks "
                           f"{'; '.join(lacking)}. Grant it deid_loader (sql/roles.sql; "
                           f"`python -m deid.admin_setup --loader {user}`)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deid.admin_setup",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--loader", help="existing login to make a deid_loader member "
                                         "(release tables already there go to deid_loader)")
    parser.add_argument("--reader", help="existing login to make a deid_reader member")
    args = parser.parse_args(argv)
    setup(args.loader, args.reader)
    print("warehouse set up: schemas, tables, roles deid_loader and deid_reader"
          + "".join(f"; {r} granted to {n}" for n, r in ((args.loader, "deid_loader"),
                                                         (args.reader, "deid_reader")) if n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
