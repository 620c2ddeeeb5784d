#!/usr/bin/env bash
# searx.sh — run a real searx search server on loopback for mixchat's
# integration tests.
#
#   scripts/searx.sh start   install searx if missing, start it, wait until it
#                            answers, and print `export MIXCHAT_TEST_SEARX_URL=...`
#   scripts/searx.sh env     print the export line of the running server
#   scripts/searx.sh status  exit 0 when the server answers, 1 otherwise
#   scripts/searx.sh stop    stop the server this script started and remove
#                            its state folder (settings, pid, log)
#
# Typical use (CI):
#   eval "$(scripts/searx.sh start)"
#   go test ./pkg/search/...
#   scripts/searx.sh stop
#
# The server is Debian's `searx` package (searx 1.1), run with Debian's
# /usr/bin/python3. It binds 127.0.0.1 only. With no network its web engines
# find nothing, so the settings enable one engine, `mixchat corpus`: searx's
# `command` engine running grep over pkg/search/testdata/searx/corpus.txt
# (lines of url|title|content), which returns real results in searx's JSON
# shape. Progress goes to stderr; stdout carries only the export line.
# Installing searx (see scripts/apt.sh) says first which packages it adds
# and why, and refuses to upgrade installed ones.
#
# Environment:
#   MIXCHAT_TEST_SEARX_DIR   state folder (settings, pid, log); default
#                       ${TMPDIR:-/tmp}/mixchat-searx
#   MIXCHAT_TEST_SEARX_PORT  port to listen on; default: a free port
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
corpus="$repo/pkg/search/testdata/searx/corpus.txt"
state=${MIXCHAT_TEST_SEARX_DIR:-${TMPDIR:-/tmp}/mixchat-searx}
pidfile="$state/searx.pid"
urlfile="$state/url"
logfile="$state/searx.log"
settings="$state/settings.yml"
example=/usr/share/doc/searx/examples/settings.yml
python=/usr/bin/python3

# shellcheck source=scripts/apt.sh
. "$here/apt.sh"

log() { echo "searx.sh: $*" >&2; }
die() { log "$*"; exit 1; }

install_searx() {
	if [ -x /usr/bin/searx-run ] && [ -f "$example" ]; then
		return
	fi
	apt_install "the search tests (pkg/search) query a real searx server on loopback" searx ||
		die "searx is not installed"
	[ -x /usr/bin/searx-run ] || die "the searx package did not provide /usr/bin/searx-run"
}

# answers URL reports whether a searx JSON search at URL succeeds.
answers() {
	"$python" - "$1" <<'PY' >/dev/null 2>&1
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/search?q=test&format=json", timeout=3) as r:
    json.load(r)
PY
}

running() {
	[ -f "$pidfile" ] && [ -f "$urlfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && answers "$(cat "$urlfile")"
}

free_port() {
	"$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

write_settings() {
	local port=$1 secret
	secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	# The example's sections before `engines:` (general, search, server, ui,
	# outgoing, checker), with our address, port and secret...
	awk '/^engines:/ { exit } { print }' "$example" |
		sed -e "s/^\( *port *:\).*/\1 $port/" \
			-e "s/^\( *bind_address *:\).*/\1 \"127.0.0.1\"/" \
			-e "s/^\( *secret_key *:\).*/\1 \"$secret\"/" \
			-e "s/^\( *method *:\).*/\1 \"GET\"/" >"$settings"
	# ...one offline engine over the test corpus (grep exits 1 on no match,
	# which searx would count as an engine error, hence `|| true`; the query's
	# words become $1.. and any of them may match)...
	cat >>"$settings" <<EOF
engines:
  - name: mixchat corpus
    engine: command
    shortcut: mc
    categories: general
    timeout: 4.0
    command: ['/bin/sh', '-c', 'pats=\$(printf "%s\n" "\$@"); grep -iF -e "\$pats" "\$0" || true', '$corpus', '{{QUERY}}']
    environment_variables:
      PATH: /usr/bin:/bin
      LC_ALL: C.UTF-8
    delimiter:
      chars: '|'
      keys: ['url', 'title', 'content']

EOF
	# ...and the sections searx cannot start without (locales, doi_resolvers,
	# default_doi_resolver).
	awk '/^locales:/ { on = 1 } on { print }' "$example" >>"$settings"
}

start() {
	if running; then
		log "already running at $(cat "$urlfile")"
		print_env
		return
	fi
	[ -f "$corpus" ] || die "test corpus $corpus not found"
	install_searx
	mkdir -p "$state"
	local port=${MIXCHAT_TEST_SEARX_PORT:-$(free_port)}
	write_settings "$port"
	local url="http://127.0.0.1:$port"
	log "starting searx on $url (log: $logfile)"
	SEARX_SETTINGS_PATH="$settings" nohup setsid "$python" /usr/bin/searx-run >"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	echo "$url" >"$urlfile"
	for _ in $(seq 1 120); do
		if answers "$url"; then
			log "ready"
			print_env
			return
		fi
		if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			tail -n 30 "$logfile" >&2 || true
			die "searx exited during start"
		fi
		sleep 0.5
	done
	tail -n 30 "$logfile" >&2 || true
	stop
	die "searx did not answer within 60 s"
}

print_env() {
	[ -f "$urlfile" ] || die "not started (no $urlfile)"
	echo "export MIXCHAT_TEST_SEARX_URL=$(cat "$urlfile")"
}

stop() {
	if [ -f "$pidfile" ]; then
		local pid
		pid=$(cat "$pidfile")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 20); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.25
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
		log "stopped"
	fi
	# What start wrote; the folder goes too when nothing else is in it.
	rm -f "$pidfile" "$urlfile" "$logfile" "$settings"
	rmdir "$state" 2>/dev/null || true
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) running || die "not running"; print_env ;;
status) running ;;
*) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
