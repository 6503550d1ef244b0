-- Least-privilege roles.  deid_loader writes the release side; deid_reader
-- reads the release schema and nothing else (not source, not restricted, not
-- audit, not release_build).  Logins are granted these roles by the DBA, e.g.
--   CREATE ROLE analyst LOGIN PASSWORD '...' IN ROLE deid_reader;
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'deid_loader') THEN
        CREATE ROLE deid_loader NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'deid_reader') THEN
        CREATE ROLE deid_reader NOLOGIN;
    END IF;
END $$;

REVOKE ALL ON SCHEMA source, release_build, restricted, audit FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

GRANT USAGE ON SCHEMA source TO deid_loader;
GRANT SELECT ON ALL TABLES IN SCHEMA source TO deid_loader;
GRANT USAGE, CREATE ON SCHEMA release, release_build, restricted, audit TO deid_loader;
GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA restricted, audit TO deid_loader;
ALTER DEFAULT PRIVILEGES IN SCHEMA release GRANT SELECT ON TABLES TO deid_reader;

GRANT USAGE ON SCHEMA release TO deid_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA release TO deid_reader;
