#!/usr/bin/env bash
# Runs the whole test suite: starts the servers the integration tests need (PostgreSQL, searx) on
# loopback, runs every Go test with the race detector, and stops the servers again.
set -euo pipefail
cd "$(dirname "$0")/.."

cleanup() {
  [ -n "${searx_started:-}" ] && scripts/searx.sh stop >/dev/null 2>&1 || true
  [ -n "${pg_started:-}" ] && scripts/postgres.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

eval "$(scripts/postgres.sh start)"
pg_started=1
eval "$(scripts/searx.sh start)"
searx_started=1
scripts/chromium.sh

go vet ./...
go test -race -count=1 -timeout 15m ./... "$@"
