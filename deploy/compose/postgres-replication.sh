#!/bin/bash
# Runs once, when the primary's data directory is created: lets the
# replica stream WAL as the attestd user (a superuser here) with its password.
set -euo pipefail
echo "host replication ${POSTGRES_USER} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
