#!/bin/bash
# postgres stand-in (postgres.Containerfile): the parts of the official image's entrypoint compose.yaml
# relies on. First start on an empty PGDATA: initdb with POSTGRES_USER as superuser and POSTGRES_PASSWORD
# (scram-sha-256 over the network, trust on the local socket), then POSTGRES_DB created.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?the postgres stand-in needs POSTGRES_PASSWORD, as the official image does}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pw=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres -c "CREATE DATABASE \"$db\"" >/dev/null
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres stand-in: initialised $PGDATA (user $user, database $db)"
fi
if [ "$1" = postgres ]; then shift; exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"; fi
exec "$@"
