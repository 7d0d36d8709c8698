#!/usr/bin/env bash
# make e2e-compose: the deployment proven. Builds the images from this checkout, starts
# the compose stack (`docker compose up --wait`), runs the end-to-end suite's smoke subset
# (tests/e2e -m smoke) against its gateway and sandbox at 1 replica, again with 2 replicas of
# users-service and orders-service (make e2e-swarm runs the whole suite through these same
# images), then the container checks (tests/compose: faults under load, image hygiene, the
# Kubernetes dev overlay rendered with these images). Always removes the stack and its volumes.
#
# Environment: DOCKER (default /usr/bin/docker, the CLI with BuildKit), E2E_PROJECT (compose
# project name, default api-platform-e2e-<pid>: a run never adopts another run's containers
# and volumes, whose secrets differ), E2E_KEEP_LOGS (folder for the containers' logs,
# default var/e2e-compose). Needs Docker with Compose v2; when no container registry can be
# reached, ../shared/containers/prepare.sh (if present) provides the base images.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
project=${E2E_PROJECT:-api-platform-e2e-$$}
logs=${E2E_KEEP_LOGS:-$root/var/e2e-compose}

# shellcheck source=deploy/compose-stack.sh
source "$root/deploy/compose-stack.sh"

trap remove_test_stack EXIT

step "Docker"
prepare_docker

step "configuration (.env with fresh secrets, free host ports)"
write_test_env e2e

step "build the images"
compose build --progress plain >"$work/build.log" 2>&1 || { tail -60 "$work/build.log" >&2; exit 1; }

step "docker compose up --wait"
compose up --detach --wait --wait-timeout 300 --no-build

export_test_urls
pytest=("$uv" run --frozen pytest -p no:cacheprovider)

# The whole suite runs through these images once, on the swarm (make e2e-swarm); here the
# smoke subset proves the compose file, at 1 replica and scaled: a second whole run would
# prove nothing new and cost CI about four minutes.
step "end-to-end smoke subset, 1 replica each"
"${pytest[@]}" tests/e2e -m smoke -q

step "end-to-end smoke subset, 2 replicas of users-service and orders-service"
compose up --detach --wait --wait-timeout 300 --no-build \
    --scale users-service=2 --scale orders-service=2
[[ $(compose ps --quiet users-service | wc -l) == 2 && $(compose ps --quiet orders-service | wc -l) == 2 ]] \
    || { echo "e2e-compose: scaling to 2 replicas failed" >&2; exit 1; }
"${pytest[@]}" tests/e2e -m smoke -q

step "container faults, image hygiene, Kubernetes overlay (1 replica each)"
# A hanging container costs seconds in the fault cases, not the default ten (the suite above
# keeps the default: on a loaded machine a slow request may take more than 3 s).
printf 'UPSTREAM_TIMEOUT_S=3\n' >>"$env_file"
compose up --detach --wait --wait-timeout 300 --no-build \
    --scale users-service=1 --scale orders-service=1
"${pytest[@]}" tests/compose -q -rA

step "passed in $((SECONDS - started))s"
