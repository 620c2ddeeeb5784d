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

# A short run of every fuzz target. MIXCHAT_TEST_FUZZTIME sets the time per target (default 5s); 0
# skips fuzzing. Each package's instrumented test binary is built once (go test -fuzz would relink it
# for every target) and run from the package's folder as go test runs it, so a failing input is saved
# under the package's testdata/fuzz/ and replayed by every later go test.
fuzztime="${MIXCHAT_TEST_FUZZTIME:-5s}"
fuzz_targets=(
  "pkg/server FuzzDecodeChatRequest" "pkg/server FuzzDecodeMixRequest"
  "pkg/llm FuzzStreamSSE"
  "pkg/search FuzzParseSearxNG"
  "pkg/text FuzzSplitLongLine"
  "pkg/kb FuzzSplit" "pkg/kb FuzzLoadPDF" "pkg/kb FuzzLoadDOCX" "pkg/kb FuzzLoadHTML"
  "pkg/kb FuzzLoadMarkdown" "pkg/kb FuzzLoadCSV" "pkg/kb FuzzLoadJSON" "pkg/kb FuzzLoadJSONL"
  "pkg/kb FuzzLoadText"
)
if [ "$fuzztime" != "0" ]; then
  fuzz_dir="$(mktemp -d)"
  fuzz_cache="$(go env GOCACHE)/fuzz/$(go list -m)"
  for pkg in pkg/server pkg/llm pkg/search pkg/kb pkg/text; do
    go test -c -fuzz . -o "$fuzz_dir/${pkg//\//_}.test" "./$pkg"
  done
  for t in "${fuzz_targets[@]}"; do
    read -r pkg target <<<"$t"
    echo "fuzz $pkg $target ($fuzztime)"
    if ! (cd "$pkg" && "$fuzz_dir/${pkg//\//_}.test" -test.run '^$' -test.fuzz "^${target}\$" \
      -test.fuzztime "$fuzztime" -test.fuzzcachedir "$fuzz_cache/$pkg") >"$fuzz_dir/log" 2>&1; then
      cat "$fuzz_dir/log"
      rm -rf "$fuzz_dir"
      exit 1
    fi
  done
  rm -rf "$fuzz_dir"
fi
