#!/bin/bash
# docker-compose warehouse init: the Airflow workers' login, member of deid_loader.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE ROLE deid_loader_login LOGIN PASSWORD '${WAREHOUSE_PASSWORD}' IN ROLE deid_loader;
SQL
