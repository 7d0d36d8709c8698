#!/usr/bin/env bash
# The stack file `docker stack deploy` takes, on stdout: docker-compose.yml with
# deploy/swarm/stack.compose.yml, as compose reads them with .env (or ENV_FILE), turned into
# what Swarm reads by deploy/swarm/stack.py. `docker stack deploy` reads no .env itself:
# every value is resolved here. deploy/README.md, Docker Swarm.
#
#   bash deploy/swarm/stack.sh > stack.json && docker stack deploy -c stack.json api-platform
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"${DOCKER:-docker}" compose --project-directory "$root" --env-file "${ENV_FILE:-$root/.env}" \
    --file "$root/docker-compose.yml" --file "$root/deploy/swarm/stack.compose.yml" \
    config --format json | python3 "$root/deploy/swarm/stack.py"
