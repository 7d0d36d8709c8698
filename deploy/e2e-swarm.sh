#!/usr/bin/env bash
# make e2e-swarm: the platform on a 3-node Docker Swarm on this machine (deploy/swarm/swarm.sh:
# the host's engine as manager, two Docker-in-Docker workers, a local registry). Deploys the
# stack (deploy/swarm/stack.sh: docker-compose.yml + deploy/swarm/stack.compose.yml) with 2
# replicas of users-service and orders-service on the workers, the gateway and PostgreSQL on
# the manager and NATS as a 3-server JetStream cluster; runs the end-to-end suite through it;
# then the drills under load (deploy/swarm/drills.py): a rolling update of users-service and
# orders-service, and a worker lost (killed), followed by the smoke subset of the suite.
# Prints where each task ran and the drills' figures; always removes the stack, the workers,
# the swarm and the registry.
#
# Environment: DOCKER (default /usr/bin/docker), E2E_PROJECT (the stack's name, default
# api-platform-swarm), E2E_KEEP_LOGS (default var/e2e-swarm), IMAGE_TAG (the images to deploy,
# default e2e: the ones make e2e-compose built; built here when missing).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
project=${E2E_PROJECT:-api-platform-swarm}
logs=${E2E_KEEP_LOGS:-$root/var/e2e-swarm}
image_tag=${IMAGE_TAG:-e2e}
# shellcheck source=deploy/compose-stack.sh
source "$root/deploy/compose-stack.sh"
# shellcheck source=deploy/swarm/swarm.sh
source "$root/deploy/swarm/swarm.sh"

services=(gateway users-service orders-service books-graphql webhooks-service)
# Built beside the services' images and run by the stack too: the mail catcher's.
development_images=(dev-mail)

# The EXIT trap: every service's log kept in $logs, the states shown when the run failed,
# then everything removed.
remove_swarm() {
    local status=$? service failed_in=$current_step
    mkdir -p "$logs"
    if docker stack ls 2>/dev/null | grep -q "^$project "; then
        for service in $(docker stack services --format '{{.Name}}' "$project"); do
            # Bounded: a service that had a task on a lost node waits for that node's logs forever.
            timeout 30 "$docker_cli" service logs --no-task-ids --timestamps "$service" \
                >"$logs/$service.log" 2>&1 || true
        done
        if [[ $status != 0 ]]; then
            echo "e2e-swarm: FAILED (exit $status); tasks follow, logs in $logs" >&2
            docker stack ps --no-trunc "$project" >&2 || true
        fi
        step "docker stack rm, and its volumes"
        stack_remove "$project"
    fi
    step "remove the workers, the swarm, the registry"
    swarm_remove
    if [[ $status != 0 ]]; then
        # Last, where CI's shortened output still shows them: the step, and the drills' figures.
        for report in "$work"/rolling-update.json "$work"/node-loss.json; do
            [[ -s $report ]] || continue
            cp "$report" "$logs/"
            python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
                "$report" >&2 || cat "$report" >&2
        done
        echo "e2e-swarm: FAILED in the step: $failed_in" >&2
    fi
    rm -rf "$work"
    exit "$status"
}
trap remove_swarm EXIT

step "Docker, the registry's and the workers' tools"
prepare_docker
command -v docker-registry >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
}
command -v mmdebstrap >/dev/null || { echo "$0: needs mmdebstrap (prepare.sh installs it)" >&2; exit 1; }

step "configuration (.env with fresh secrets, free host ports)"
write_test_env "$image_tag"

step "this checkout's images ($image_tag; make e2e-compose built them)"
compose build --progress plain >"$work/build.log" 2>&1 || { tail -60 "$work/build.log" >&2; exit 1; }

step "registry"
registry_start

step "swarm: this host the manager, ${workers[*]} workers"
swarm_create

step "push the images to $registry"
for service in "${services[@]}" "${development_images[@]}"; do
    push_image "api-platform/$service:$image_tag" "$registry/api-platform/$service:$image_tag"
done
for base in POSTGRES_IMAGE:postgres:16-alpine REDIS_IMAGE:redis:7-alpine; do
    push_image "${base#*:}" "$registry/${base#*:}"
    printf '%s=%s\n' "${base%%:*}" "$registry/${base#*:}" >>"$env_file"
done
printf 'IMAGE_REGISTRY=%s/api-platform\nNATS_CLUSTER_PASSWORD_PATH=%s\n' \
    "$registry" "$work/deploy/secrets/nats_cluster_password" >>"$env_file"

step "docker stack deploy"
ENV_FILE=$env_file DOCKER=$docker_cli bash deploy/swarm/stack.sh >"$work/stack.json"
docker stack deploy --resolve-image never --compose-file "$work/stack.json" "$project" >/dev/null
export_test_urls
"$uv" run --frozen python deploy/swarm/drills.py converge --stack "$project" | tee "$work/converge.json"
E2E_BOOKS_URL=$("$uv" run --frozen python deploy/swarm/drills.py published-url --stack "$project" --service books-graphql)
export E2E_BOOKS_URL E2E_SWARM_STACK=$project E2E_SWARM_RECEIVER_HOST=$swarm_address
pytest=("$uv" run --frozen pytest -p no:cacheprovider)

step "end-to-end suite through the swarm (2 replicas of users-service and orders-service)"
"${pytest[@]}" tests/e2e --ignore=tests/e2e/faults -q

step "drill: rolling update of users-service and orders-service under load"
push_image "api-platform/users-service:$image_tag" "$registry/api-platform/users-service:$image_tag-next"
push_image "api-platform/orders-service:$image_tag" "$registry/api-platform/orders-service:$image_tag-next"
"$uv" run --frozen python deploy/swarm/drills.py rolling-update --stack "$project" \
    --image "users-service=$registry/api-platform/users-service:$image_tag-next" \
    --image "orders-service=$registry/api-platform/orders-service:$image_tag-next" \
    | tee "$work/rolling-update.json"

step "drill: a worker lost under load"
"$uv" run --frozen python deploy/swarm/drills.py node-loss --stack "$project" \
    --node-container-prefix "$project-" | tee "$work/node-loss.json"
E2E_BOOKS_URL=$("$uv" run --frozen python deploy/swarm/drills.py published-url --stack "$project" --service books-graphql)

step "smoke subset of the suite, one worker down"
"${pytest[@]}" tests/e2e -m smoke -q

mkdir -p "$logs"
cp "$work/converge.json" "$work/rolling-update.json" "$work/node-loss.json" "$logs/"
step "passed in $((SECONDS - started))s"
