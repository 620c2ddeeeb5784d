#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests.
#
#   eval "$(scripts/postgres.sh start)"   # start (installing PostgreSQL if missing), export the DSN
#   go test -race ./pkg/memory/...        # the PostgreSQL store tests run when MIXCHAT_TEST_POSTGRES_DSN is set
#   scripts/postgres.sh stop              # stop it and remove its files
#
#   scripts/postgres.sh env               # print the export line of a running server
#   scripts/postgres.sh status            # exit 0 if it runs
#
# `start` writes only the export line to stdout (progress goes to stderr), so
# `eval "$(scripts/postgres.sh start)"` sets MIXCHAT_TEST_POSTGRES_DSN, e.g.
#   postgres://postgres@127.0.0.1:54329/mixchat?sslmode=disable
#
# The server listens on 127.0.0.1 only, keeps its data, log and socket in
# MIXCHAT_PG_DIR (default /tmp/mixchat-pg), trusts local connections and runs
# with fsync off: for tests only. The port is MIXCHAT_PG_PORT (default 54329),
# or the next free one. `stop` removes MIXCHAT_PG_DIR. When PostgreSQL is
# missing it is installed with apt-get (scripts/apt.sh: says what and why
# first, never upgrades installed packages); run as root, the server runs as
# the postgres user (PostgreSQL refuses root).
set -euo pipefail

DIR=${MIXCHAT_PG_DIR:-/tmp/mixchat-pg}
PORT=${MIXCHAT_PG_PORT:-54329}
DB=mixchat

# shellcheck source=scripts/apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# bindir prints the directory of the newest installed PostgreSQL's programs.
bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [[ -n $d && -x $d/initdb ]]; then
		echo "$d"
		return
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir)
		if [[ -x $d/initdb ]]; then
			echo "$d"
			return
		fi
	fi
	if command -v initdb >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
	fi
}

install_postgres() {
	apt_install "the PostgreSQL store tests (memory, kb, auth, replicas) run a throwaway server on loopback" postgresql ||
		die "PostgreSQL is not installed"
}

# as_owner runs a command as the user that owns the server: postgres when we
# are root, ourselves otherwise.
as_owner() {
	if [[ $(id -u) == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

dsn() {
	echo "postgres://postgres@127.0.0.1:$1/$DB?sslmode=disable"
}

# port_free says whether nothing listens on 127.0.0.1:$1.
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running() {
	local bin
	bin=$(bindir)
	[[ -n $bin && -f $DIR/data/PG_VERSION ]] && as_owner "$bin/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

start() {
	if running; then
		log "already running in $DIR"
		print_env
		return
	fi
	local bin
	bin=$(bindir)
	if [[ -z $bin ]]; then
		install_postgres
		bin=$(bindir)
		[[ -n $bin ]] || die "PostgreSQL installed but initdb not found"
	fi

	rm -rf "$DIR"
	mkdir -p "$DIR"
	if [[ $(id -u) == 0 ]]; then
		chown postgres: "$DIR"
	fi
	chmod 700 "$DIR"

	local port=$PORT
	while ! port_free "$port"; do
		port=$((port + 1))
		((port < PORT + 100)) || die "no free port in $PORT..$((PORT + 99))"
	done

	log "initdb in $DIR/data"
	as_owner "$bin/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-locale >"$DIR/initdb.log" 2>&1 ||
		{ cat "$DIR/initdb.log" >&2; die "initdb failed"; }
	log "starting on 127.0.0.1:$port"
	as_owner "$bin/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >&2 || { cat "$DIR/server.log" >&2; die "pg_ctl start failed"; }
	echo "$port" >"$DIR/port"
	as_owner "$bin/createdb" -h "$DIR" -p "$port" -U postgres "$DB" >&2
	print_env
}

print_env() {
	[[ -f $DIR/port ]] || die "not running (no $DIR/port); run: $0 start"
	echo "export MIXCHAT_TEST_POSTGRES_DSN='$(dsn "$(cat "$DIR/port")")'"
}

stop() {
	local bin
	bin=$(bindir)
	if [[ -n $bin && -f $DIR/data/PG_VERSION ]]; then
		as_owner "$bin/pg_ctl" -D "$DIR/data" -m fast -w stop >&2 || true
	fi
	rm -rf "$DIR"
	log "stopped; removed $DIR"
}

case ${1:-} in
start) start ;;
stop) stop ;;
env) print_env ;;
status) running ;;
*)
	echo "usage: $0 start|stop|env|status" >&2
	exit 2
	;;
esac
