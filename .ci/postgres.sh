#!/usr/bin/env bash
# Make sure a PostgreSQL answers on 127.0.0.1:$CI_PG_PORT with trust auth and a `test`
# database. If none does, install PostgreSQL from Debian's packages, create a cluster
# named `memory_summary_ci` on that port, and start it; `ci_postgres_stop` stops and
# drops only a cluster this script created. Meant to be sourced by .ci/run.
CI_PG_PORT="${CI_PG_PORT:-5432}"
CI_PG_CLUSTER=memory_summary_ci
CI_PG_STARTED=""

ci_postgres_ready() {
  command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p "$CI_PG_PORT"
}

ci_postgres_start() {
  if ci_postgres_ready; then
    echo "postgres: using the server already on 127.0.0.1:$CI_PG_PORT"
  else
    echo "postgres: none on 127.0.0.1:$CI_PG_PORT; installing from Debian's packages"
    if ! command -v pg_createcluster >/dev/null 2>&1; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    local version
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    pg_dropcluster --stop "$version" "$CI_PG_CLUSTER" >/dev/null 2>&1 || true
    pg_createcluster -p "$CI_PG_PORT" "$version" "$CI_PG_CLUSTER" -- \
      --auth-local=trust --auth-host=trust >/dev/null
    echo "listen_addresses = '127.0.0.1'" >>"/etc/postgresql/$version/$CI_PG_CLUSTER/postgresql.conf"
    pg_ctlcluster --skip-systemctl-redirect "$version" "$CI_PG_CLUSTER" start
    CI_PG_STARTED="$version"
    for _ in $(seq 1 30); do ci_postgres_ready && break; sleep 1; done
  fi
  if ! psql -h 127.0.0.1 -p "$CI_PG_PORT" -U postgres -d test -Atqc 'select 1' >/dev/null 2>&1; then
    psql -h 127.0.0.1 -p "$CI_PG_PORT" -U postgres -d postgres -qc 'CREATE DATABASE test'
  fi
  export MEMORY_SUMMARY_PG_DSN="host=127.0.0.1 port=$CI_PG_PORT dbname=test user=postgres connect_timeout=5"
}

ci_postgres_stop() {
  if [ -n "$CI_PG_STARTED" ]; then
    echo "postgres: stopping the cluster this run started"
    pg_dropcluster --stop "$CI_PG_STARTED" "$CI_PG_CLUSTER" || true
  fi
}
