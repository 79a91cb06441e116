#!/usr/bin/env bash
# Brings up the production backends the suite talks to: PostgreSQL, ClickHouse (Debian's
# clickhouse-server 18.16) and NATS JetStream. Idempotent: whatever already answers is left alone.
# Prints the environment the tests need, e.g.  eval "$(bash scripts/services.sh --env)"
set -euo pipefail
quiet() { "$@" >/dev/null 2>&1; }

ensure_apt() { # ensure_apt <binary> <package...>
  local bin=$1; shift
  command -v "$bin" >/dev/null 2>&1 && return 0
  echo "installing $*" >&2
  [ -n "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ] || apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2 || { apt-get update -qq >&2; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2; }
}

wait_for() { # wait_for <seconds> <command...>
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

# PostgreSQL
if ! quiet pg_isready -h 127.0.0.1 -p 5432; then
  ensure_apt pg_ctlcluster postgresql
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start >&2 || true
  wait_for 30 pg_isready -h 127.0.0.1 -p 5432 || { echo "PostgreSQL did not start" >&2; exit 1; }
fi
quiet psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname='analytics_test'" | grep -q 1 \
  || quiet psql -h 127.0.0.1 -U postgres -c "create database analytics_test" || true

# ClickHouse
ch_up() { curl -sf http://127.0.0.1:8123/ping; }
if ! quiet ch_up; then
  ensure_apt clickhouse-server clickhouse-server clickhouse-client
  mkdir -p /var/lib/clickhouse /var/log/clickhouse-server
  chown -R clickhouse:clickhouse /var/lib/clickhouse /var/log/clickhouse-server 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --chuid clickhouse --exec /usr/sbin/clickhouse-server \
    -- --config-file=/etc/clickhouse-server/config.xml >&2
  wait_for 60 ch_up || { echo "ClickHouse did not start; see /var/log/clickhouse-server" >&2; exit 1; }
fi

# NATS JetStream
if ! quiet bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222'; then
  ensure_apt nats-server nats-server
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log >&2
  wait_for 30 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222' || { echo "NATS did not start" >&2; exit 1; }
fi

# ZooKeeper (and its JRE) for the ClickHouse cluster tests, which start their own ZooKeeper and
# two clickhouse-server shards on private ports (test/support/clickhouse-cluster.ts)
ensure_apt /usr/share/zookeeper/bin/zkServer.sh zookeeper

# promtool (Debian's prometheus package) for the alert rules' checks and unit tests, and Lua 5.4 for
# the Argo CD health checks (test/packaging-observability, test/packaging-gitops)
ensure_apt promtool prometheus
ensure_apt lua5.4 lua5.4

# Chromium for the browser-SDK tests (mixpanel-browser in a real page on another origin)
ensure_apt chromium chromium

if [ "${1:-}" = "--env" ]; then
  echo "export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/analytics_test"
  echo "export TEST_CLICKHOUSE_URL=http://127.0.0.1:8123"
  echo "export TEST_NATS_URL=nats://127.0.0.1:4222"
else
  echo "PostgreSQL 127.0.0.1:5432, ClickHouse http://127.0.0.1:8123, NATS 127.0.0.1:4222: up" >&2
fi
