#!/usr/bin/env bash
# `make bootstrap`: check the machine's prerequisites, get uv, install the locked dependencies.
#
# uv comes from, in order: PATH, ~/.local/bin/uv, or a private virtual environment under
# ./.tools made with the machine's python3 (so it works where `pip install --user` is refused,
# PEP 668: Debian 12, Ubuntu 24.04, Homebrew). Every missing prerequisite is named at once,
# before anything is downloaded or built.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=.tools
MIN_PYTHON=3.11
missing=()

need() {  # need <what> <why> <command>...: record <what> unless one of the commands exists
  local what=$1 why=$2
  shift 2
  for candidate in "$@"; do
    command -v "$candidate" >/dev/null 2>&1 && return 0
  done
  missing+=("$what ($why)")
}

find_uv() {
  command -v uv 2>/dev/null && return 0
  for candidate in "$HOME/.local/bin/uv" "$TOOLS/bin/uv"; do
    [ -x "$candidate" ] && { echo "$candidate"; return 0; }
  done
  return 1
}

uv=$(find_uv || true)

if [ -z "$uv" ]; then
  # Making the private tools environment needs Python 3.11+ with its venv module.
  if ! command -v python3 >/dev/null 2>&1; then
    missing+=("python3 >= $MIN_PYTHON (to install uv; or install uv yourself: https://docs.astral.sh/uv/)")
  elif ! python3 -c "import sys; sys.exit(sys.version_info < (3, 11))"; then
    missing+=("python3 >= $MIN_PYTHON (found $(python3 -V 2>&1))")
  elif ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=("python3's venv module (Debian/Ubuntu: apt-get install python3-venv)")
  fi
fi

# Tartiflette (books-graphql) has no wheels: installing it builds libgraphqlparser, a C++
# library, with cmake. Only needed while it is not installed yet.
if ! [ -x .venv/bin/python ] || ! .venv/bin/python -c "import tartiflette" >/dev/null 2>&1; then
  need cmake "builds Tartiflette's C++ parser" cmake
  need "a C++ compiler" "builds Tartiflette's C++ parser: g++ or clang++" c++ g++ clang++
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "make bootstrap: missing prerequisites:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  echo "Install them and run make bootstrap again (README: Prerequisites)." >&2
  exit 1
fi

if [ -z "$uv" ]; then
  echo "make bootstrap: installing uv into $TOOLS/ (a private virtual environment)"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check uv
  uv=$TOOLS/bin/uv
fi

"$uv" sync --frozen --quiet
