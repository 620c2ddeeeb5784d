# apt.sh — sourced by the test scripts (postgres.sh, searx.sh, chromium.sh):
# install the Debian packages a test server needs, saying first what will be
# installed and why, and never upgrading a package that is already there.
#
#   apt_install "WHY" PACKAGE...
#
# Packages already installed (dpkg) are left alone; when all are, nothing
# runs and nothing is printed. Otherwise apt-get simulates the install
# (--no-install-recommends --no-upgrade) and the plan is printed to stderr:
# the packages asked for, why, and every package apt would add. If the plan
# would upgrade an installed package (a newer dependency), it stops and says
# which, unless MIXCHAT_TEST_APT_UPGRADE=1. The package lists are refreshed
# (apt-get update) only when a package cannot be found or fetched.
# MIXCHAT_TEST_APT_DRY_RUN=1 prints the plan and installs nothing (returns 1).

apt_log() { echo "${0##*/}: $*" >&2; }

apt_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_install() {
	local why=$1 p
	shift
	local missing=()
	for p in "$@"; do
		apt_installed "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if ! command -v apt-get >/dev/null 2>&1; then
		apt_log "missing ${missing[*]} ($why), and apt-get is not available: install them yourself"
		return 1
	fi
	local sudo=()
	if [ "$(id -u)" != 0 ]; then
		if ! command -v sudo >/dev/null 2>&1; then
			apt_log "missing ${missing[*]} ($why): run as root or install them yourself"
			return 1
		fi
		sudo=(sudo -n)
	fi
	local opts=(-o DPkg::Lock::Timeout=300 --no-install-recommends --no-upgrade)
	local attempt plan added upgraded
	for attempt in 1 2; do
		if [ "$attempt" = 2 ]; then
			apt_log "refreshing the package lists (apt-get update)"
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 || return 1
		fi
		if ! plan=$(LC_ALL=C apt-get -s install "${opts[@]}" "${missing[@]}" 2>&1); then
			[ "$attempt" = 1 ] && continue
			echo "$plan" >&2
			return 1
		fi
		added=$(awk '$1 == "Inst" && $3 !~ /^\[/ { printf "%s ", $2 }' <<<"$plan")
		upgraded=$(awk '$1 == "Inst" && $3 ~ /^\[/ { printf "%s ", $2 }' <<<"$plan")
		apt_log "installing ${missing[*]}: $why"
		apt_log "apt-get adds $(wc -w <<<"$added") packages: ${added% }"
		if [ -n "$upgraded" ]; then
			apt_log "this would also upgrade installed packages: ${upgraded% }"
			if [ "${MIXCHAT_TEST_APT_UPGRADE:-}" != 1 ]; then
				apt_log "refusing to upgrade what was not asked for: install ${missing[*]} yourself, or set MIXCHAT_TEST_APT_UPGRADE=1"
				return 1
			fi
		fi
		if [ "${MIXCHAT_TEST_APT_DRY_RUN:-}" = 1 ]; then
			apt_log "dry run (MIXCHAT_TEST_APT_DRY_RUN=1): nothing installed"
			return 1
		fi
		# apt-get's and dpkg's progress is shown only when the install fails.
		local out
		out=$(mktemp)
		if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -q "${missing[@]}" >"$out" 2>&1; then
			rm -f "$out"
			apt_log "installed ${missing[*]}"
			return 0
		fi
		cat "$out" >&2
		rm -f "$out"
		apt_log "apt-get install failed"
	done
	return 1
}
