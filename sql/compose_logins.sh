#!/bin/bash
# docker-compose warehouse init (after the schemas and sql/roles.sql): the Airflow
# workers' login, a member of deid_loader only, acting as deid_loader (so that the
# release tables it creates belong to the role).  The password comes from .env
# through the container's environment and is passed as a psql variable, quoted
# by psql (:'...'), never spliced into the SQL text.
set -euo pipefail
: "${WAREHOUSE_PASSWORD:?set WAREHOUSE_PASSWORD in .env}"
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v loader_password="$WAREHOUSE_PASSWORD" <<'SQL'
CREATE ROLE deid_loader_login LOGIN IN ROLE deid_loader;
ALTER ROLE deid_loader_login PASSWORD :'loader_password';
ALTER ROLE deid_loader_login SET role = 'deid_loader';
SQL
