#!/usr/bin/env bash
# chromium.sh — make sure the headless browser the web app's end-to-end tests
# drive is installed: Debian's `chromium` and a CJK font (`fonts-wqy-microhei`,
# without which Chinese renders as boxes in screenshots).
#
#   scripts/chromium.sh          install what is missing (needs root or sudo)
#   scripts/chromium.sh check    exit 0 when both are present, 1 otherwise
#
# Non-interactive: apt-get runs with DEBIAN_FRONTEND=noninteractive and -y,
# and `apt-get update` runs only when a package is missing. Progress goes to
# stderr. The e2e tests (go test ./e2e/) skip with a message when
# /usr/bin/chromium is absent.
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
have_pkg fonts-wqy-microhei || missing+=(fonts-wqy-microhei)

if [ "${1:-}" = check ]; then
  if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
  log "missing: ${missing[*]}"
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  log "chromium and fonts-wqy-microhei already installed ($(/usr/bin/chromium --version 2>/dev/null || echo chromium))"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo -n)
  else
    log "need root to install ${missing[*]}; run as root or install them yourself"
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
log "installing ${missing[*]}"
"${sudo[@]}" apt-get update -q >&2
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
log "installed: $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
