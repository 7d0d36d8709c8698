#!/usr/bin/env bash
# The services' versions as compose variables, one NAME=VERSION line each, read from each
# service's pyproject.toml (its one source, docs/releasing.md): docker-compose.yml passes them
# to the build (SERVICE_VERSION), which labels the image (org.opencontainers.image.version)
# and fails if the version given is not the member's own. Append them to the .env:
#   bash deploy/service-versions.sh >> .env
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for member in gateway users-service orders-service books-graphql webhooks-service; do
    version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/$member/pyproject.toml" | head -1)
    [[ -n $version ]] || { echo "service-versions: no version in $member/pyproject.toml" >&2; exit 1; }
    name=$(tr 'a-z-' 'A-Z_' <<<"$member")_VERSION
    printf '%s=%s\n' "$name" "$version"
done
