#!/usr/bin/env bash
# `make test`'s own prerequisites, checked before anything runs: the programs some suites
# start (a browser, JavaScript clients, a Redis server, Prometheus' rule checker). Every
# missing one is named at once with its install line, instead of a suite failing minutes in.
set -euo pipefail

missing=()

need() {  # need <what> <install line> <command>...: record <what> unless one command exists
  local what=$1 install=$2
  shift 2
  for candidate in "$@"; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 && return 0
  done
  missing+=("$what — $install")
}

need "Node.js" "Debian/Ubuntu: apt-get install nodejs npm; macOS: brew install node" node
need "npm" "Debian/Ubuntu: apt-get install npm; macOS: brew install node" npm
need "Chromium (or CHROMIUM_BIN)" \
  "Debian/Ubuntu: apt-get install chromium; macOS: brew install chromium" \
  "${CHROMIUM_BIN:-}" chromium chromium-browser
need "redis-server" "Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis" \
  redis-server
need "promtool" "Debian/Ubuntu: apt-get install prometheus; macOS: brew install prometheus" \
  promtool
need "git" "Debian/Ubuntu: apt-get install git; macOS: xcode-select --install" git

if [ ${#missing[@]} -gt 0 ]; then
  echo "make test: missing prerequisites of the test suites:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  echo "Install them and run make test again (README: Prerequisites)." >&2
  exit 1
fi
