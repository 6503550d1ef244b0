-- Least-privilege roles, applied by the warehouse owner after
-- sql/source_schema.sql and sql/release_schema.sql (`python -m deid.admin_setup`
-- runs the three; so does a DBA with psql -f, in that order).  Idempotent:
-- it also takes back what earlier versions granted too widely.
--
--   deid_loader  what a release run needs and nothing more: read source; build
--                tables in release_build and swap them into release (it owns
--                the tables it makes); add and replace its run's restricted rows;
--                append release history rows (never change or delete them);
--                append audit rows (and read them, for the Releases view).  It
--                creates no schema and changes no table of source, restricted
--                or audit.
--   deid_reader  reads the release schema and nothing else.
--
-- A login gets a role from the DBA (or `python -m deid.admin_setup --loader NAME`):
--   CREATE ROLE etl LOGIN PASSWORD '...' IN ROLE deid_loader;
--   ALTER ROLE etl SET role = 'deid_loader';  -- its tables belong to deid_loader
--   CREATE ROLE analyst LOGIN PASSWORD '...' IN ROLE deid_reader;
-- The second line lets any loader login replace a release another one loaded.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'deid_loader') THEN
        CREATE ROLE deid_loader NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'deid_reader') THEN
        CREATE ROLE deid_reader NOLOGIN;
    END IF;
END $$;

REVOKE ALL ON SCHEMA source, release, release_build, restricted, audit FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON SCHEMA source, restricted, audit FROM deid_loader;
REVOKE ALL ON ALL TABLES IN SCHEMA source, restricted, audit FROM deid_loader;

GRANT USAGE ON SCHEMA source TO deid_loader;
GRANT SELECT ON ALL TABLES IN SCHEMA source TO deid_loader;
ALTER DEFAULT PRIVILEGES IN SCHEMA source GRANT SELECT ON TABLES TO deid_loader;

-- A run replaces a release table, so it must own it: release tables loaded
-- before by another login are handed over once, with
-- ALTER TABLE release.<name> OWNER TO deid_loader (admin_setup --loader does it).
GRANT USAGE, CREATE ON SCHEMA release, release_build TO deid_loader;

GRANT USAGE ON SCHEMA restricted, audit TO deid_loader;
GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA restricted TO deid_loader;
-- The release history is append-only for runs: a run is checked against
-- what was published, which no run may rewrite (the owner may).
REVOKE DELETE ON restricted.release_history, restricted.release_parts FROM deid_loader;
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA audit TO deid_loader;

GRANT USAGE ON SCHEMA release TO deid_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA release TO deid_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA release GRANT SELECT ON TABLES TO deid_reader;
