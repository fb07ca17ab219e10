#!/bin/bash
# The read replica: on first start, a base backup of the primary that
# starts as a hot standby streaming its WAL (pg_basebackup -R); then the
# server. Runs as the postgres user of the postgres image.
set -euo pipefail
export PGDATA=${PGDATA:-/var/lib/postgresql/data}
umask 077
printf '%s:5432:*:%s:%s\n' "$PRIMARY_HOST" "$PRIMARY_USER" "$(cat /run/secrets/pg_password)" > /tmp/pgpass
export PGPASSFILE=/tmp/pgpass
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_basebackup -h "$PRIMARY_HOST" -U "$PRIMARY_USER" -D "$PGDATA" -R -X stream -c fast; do
    echo "waiting for the primary" >&2; rm -rf "${PGDATA:?}"/*; sleep 2
  done
fi
exec postgres -c hot_standby=on -c max_connections=300
