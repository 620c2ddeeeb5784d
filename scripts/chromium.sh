#!/usr/bin/env bash
# chromium.sh — make sure the headless browser the web app's end-to-end tests
# drive is installed: Debian's `chromium` and a CJK font (`fonts-wqy-microhei`,
# without which Chinese renders as boxes in screenshots).
#
#   scripts/chromium.sh          install what is missing (needs root or sudo)
#   scripts/chromium.sh check    exit 0 when both are present, 1 otherwise
#
# Installing goes through scripts/apt.sh: it says first which packages it
# adds and why, never upgrades installed packages, and runs `apt-get update`
# only when a package cannot be found. Progress goes to stderr. The e2e tests
# (go test ./e2e/) skip with a message when /usr/bin/chromium is absent.
set -euo pipefail

# shellcheck source=scripts/apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

log() { echo "chromium.sh: $*" >&2; }

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
apt_installed fonts-wqy-microhei || missing+=(fonts-wqy-microhei)

if [ "${1:-}" = check ]; then
  if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
  log "missing: ${missing[*]}"
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  log "chromium and fonts-wqy-microhei already installed ($(/usr/bin/chromium --version 2>/dev/null || echo chromium))"
  exit 0
fi

apt_install "the web app's browser tests (go test ./e2e/) drive headless Chromium; the font draws Chinese in screenshots" "${missing[@]}" ||
  { log "not installed: ${missing[*]}; the e2e tests will skip"; exit 1; }
log "ready: $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
