#!/bin/bash
# Runs once, when the primary's data directory is created (the postgres image's
# /docker-entrypoint-initdb.d): a role the replica streams with, and the line of
# pg_hba.conf that lets it. REPLICATION_PASSWORD comes from compose's .env.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '${REPLICATION_PASSWORD}';
SELECT pg_create_physical_replication_slot('replica1');
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
