#!/usr/bin/env bash
# Runs the whole test suite: starts the servers the integration tests need (PostgreSQL, searx) on
# loopback, runs every Go test with the race detector, and stops the servers again.
#
# What it needs, and installs with apt-get when missing (scripts/apt.sh says which packages and why
# before installing anything, and never upgrades installed packages): postgresql (the PostgreSQL store
# tests), searx (the search tests), chromium and fonts-wqy-microhei (the web app's browser tests). On a
# machine that has them it installs nothing. Servers already running (say, a PostgreSQL another run
# started) are used and left running; the ones this run starts are stopped at the end, and their folders
# under /tmp removed, as is every temporary folder this script makes.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_dir=""
cleanup() {
  [ -n "${searx_started:-}" ] && scripts/searx.sh stop >/dev/null 2>&1 || true
  [ -n "${pg_started:-}" ] && scripts/postgres.sh stop >/dev/null 2>&1 || true
  [ -n "$fuzz_dir" ] && rm -rf "$fuzz_dir"
  return 0
}
trap cleanup EXIT

# start SCRIPT VAR: export the server's DSN or URL, starting it unless one runs; VAR records that this
# run started it.
start() {
  local script=$1 var=$2 exports
  if "$script" status >/dev/null 2>&1; then
    exports=$("$script" env)
    eval "$exports"
    echo "test.sh: using the running server of $script" >&2
    return
  fi
  printf -v "$var" 1 # set before starting, so a failed start is cleaned up too
  exports=$("$script" start)
  eval "$exports"
}
start scripts/postgres.sh pg_started
start scripts/searx.sh searx_started
scripts/chromium.sh

go vet ./...
go test -race -count=1 -timeout 15m ./... "$@"

# A short run of every fuzz target. MIXCHAT_TEST_FUZZTIME sets the budget per target (default 10000x:
# ten thousand executions, a few seconds each here); 0 skips fuzzing. The default is a count, not a
# duration: with a duration Go's fuzz coordinator can report a spurious "context deadline exceeded" at
# the deadline when the machine is busy (golang/go#75804), failing a target that found nothing. Each
# package's instrumented test binary is built once (go test -fuzz would relink it for every target) and
# run from the package's folder as go test runs it, so a failing input is saved under the package's
# testdata/fuzz/ and replayed by every later go test.
fuzztime="${MIXCHAT_TEST_FUZZTIME:-10000x}"
fuzz_targets=(
  "pkg/server FuzzDecodeChatRequest" "pkg/server FuzzDecodeMixRequest"
  "pkg/llm FuzzStreamSSE" "pkg/llm FuzzDecodeChunk"
  "pkg/extractive FuzzExtractiveReply" "pkg/extractive FuzzRewrite" "pkg/extractive FuzzMatch"
  "pkg/search FuzzParseSearxNG" "pkg/retrieve FuzzDotInt8"
  "pkg/text FuzzSplitLongLine" "pkg/text FuzzSentences"
  "pkg/kb FuzzSplit" "pkg/kb FuzzLoadPDF" "pkg/kb FuzzLoadDOCX" "pkg/kb FuzzLoadHTML"
  "pkg/kb FuzzLoadMarkdown" "pkg/kb FuzzLoadCSV" "pkg/kb FuzzLoadJSON" "pkg/kb FuzzLoadJSONL"
  "pkg/kb FuzzLoadText"
  "pkg/docstruct FuzzParse" "pkg/docstruct FuzzParseAddress"
)
if [ "$fuzztime" != "0" ]; then
  fuzz_dir="$(mktemp -d)"
  fuzz_cache="$(go env GOCACHE)/fuzz/$(go list -m)"
  for pkg in $(for t in "${fuzz_targets[@]}"; do echo "${t%% *}"; done | sort -u); do
    go test -c -fuzz . -o "$fuzz_dir/${pkg//\//_}.test" "./$pkg"
  done
  for t in "${fuzz_targets[@]}"; do
    read -r pkg target <<<"$t"
    echo "fuzz $pkg $target ($fuzztime)"
    if ! (cd "$pkg" && "$fuzz_dir/${pkg//\//_}.test" -test.run '^$' -test.fuzz "^${target}\$" \
      -test.fuzztime "$fuzztime" -test.fuzzcachedir "$fuzz_cache/$pkg") >"$fuzz_dir/log" 2>&1; then
      cat "$fuzz_dir/log"
      exit 1
    fi
  done
fi
