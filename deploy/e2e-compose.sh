#!/usr/bin/env bash
# make e2e-compose: the deployment proven. Builds the four images from this checkout, starts
# the compose stack (`docker compose up --wait`), runs the end-to-end suite (tests/e2e)
# against its gateway and sandbox, again with 2 replicas of users-service and orders-service,
# then the container checks (tests/compose: faults under load, image hygiene, the Kubernetes
# dev overlay rendered with these images). Always removes the stack and its volumes.
#
# Environment: DOCKER (default /usr/bin/docker, the CLI with BuildKit), E2E_PROJECT (compose
# project name, default api-platform-e2e), E2E_KEEP_LOGS (folder for the containers' logs,
# default var/e2e-compose). Needs Docker with Compose v2; when no container registry can be
# reached, ../shared/containers/prepare.sh (if present) provides the base images.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
docker_cli=${DOCKER:-/usr/bin/docker}
project=${E2E_PROJECT:-api-platform-e2e}
logs=${E2E_KEEP_LOGS:-$root/var/e2e-compose}
uv=${UV:-$(command -v uv || echo "$root/.tools/bin/uv")}  # make passes the uv it uses
export DOCKER_BUILDKIT=1
work=$(mktemp -d)
env_file=$work/.env
started=$SECONDS

step() { printf '\n== %s (at %ss)\n' "$*" "$((SECONDS - started))"; }
compose() { "$docker_cli" compose --project-name "$project" --env-file "$env_file" "$@"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cleanup() {
    local status=$?
    if [[ -s $env_file ]]; then
        mkdir -p "$logs"
        compose logs --no-color --timestamps >"$logs/containers.log" 2>&1 || true
        if [[ $status != 0 ]]; then
            echo "e2e-compose: FAILED (exit $status); container states and log tails follow." >&2
            compose ps --all >&2 || true
            compose logs --no-color --tail 40 >&2 || true
            echo "e2e-compose: every container's whole log: $logs/containers.log" >&2
        fi
        step "docker compose down -v"
        compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

step "Docker"
# These machines reach no container registry: the handout's script builds local stand-ins
# for the public base images. Anywhere else Docker pulls them as usual.
if ! curl --silent --output /dev/null --max-time 5 https://registry-1.docker.io/v2/; then
    prepare=$root/../shared/containers/prepare.sh
    [[ -r $prepare ]] || { echo "e2e-compose: no registry reachable and no $prepare" >&2; exit 1; }
    bash "$prepare" >"$work/prepare.log" 2>&1 || { tail -30 "$work/prepare.log" >&2; exit 1; }
fi
"$docker_cli" compose version >/dev/null || { echo "e2e-compose: needs Docker Compose v2" >&2; exit 1; }

step "configuration (.env with fresh secrets, free host ports)"
ENV_FILE=$env_file bash deploy/init-secrets.sh >/dev/null
gateway_port=$(free_port)
books_port=$(free_port)
overrides=(
    "JWT_PRIVATE_KEY_PATH=$work/deploy/secrets/jwt_private_key.pem"
    "ADMIN_PASSWORD_PATH=$work/deploy/secrets/admin_password"
    "WEBHOOK_SECRETS_KEY_PATH=$work/deploy/secrets/webhook_secrets.key"
    "NATS_SEEDS_PATH=$work/deploy/secrets/nats"
    "IMAGE_TAG=e2e"
    "GATEWAY_PUBLISHED_PORT=$gateway_port"
    "BOOKS_PUBLISHED_PORT=$books_port"
    "ADMIN_EMAIL=admin@e2e.example.com"
    # The tests read the schema with GraphQL clients, directly and through the gateway.
    "BOOKS_INTROSPECTION=true"
    "BOOKS_GRAPHIQL=true"
    # Every test logs in from 127.0.0.1; the limits themselves are tested in the gateway.
    "RATE_LIMIT_RPS=100000"
    "RATE_LIMIT_BURST=100000"
    "LOGIN_RATE_LIMIT_PER_MINUTE=100000"
    "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE=100000"
    "LOGIN_ACCOUNT_CEILING_PER_MINUTE=100000"
    "ADDRESS_RATE_LIMIT_RPS=100000"
    "ADDRESS_RATE_LIMIT_BURST=100000"
    "SIGNUP_RATE_LIMIT_PER_MINUTE=100000"
    "REFRESH_RATE_LIMIT_PER_MINUTE=100000"
    "REFRESH_SESSION_RATE_LIMIT_PER_MINUTE=100000"
    "CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE=100000"
    "CURRENT_PASSWORD_FAILURE_LIMIT=100000"
)
# The images' version labels: each service's pyproject.toml version.
mapfile -t versions < <(bash deploy/service-versions.sh)
overrides+=("${versions[@]}")
for line in "${overrides[@]}"; do
    sed -i "/^${line%%=*}=/d" "$env_file"
    printf '%s\n' "$line" >>"$env_file"
done
admin_password=$(cat "$work/deploy/secrets/admin_password")
# Compose prefers the shell's variables to the .env file's: `make` exports development
# defaults (ADMIN_PASSWORD...), which production settings refuse. The .env decides.
while IFS= read -r name; do
    unset "$name"
done < <(sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' "$env_file")

step "build the four images"
compose build --progress plain >"$work/build.log" 2>&1 || { tail -60 "$work/build.log" >&2; exit 1; }

step "docker compose up --wait"
compose up --detach --wait --wait-timeout 300 --no-build

export E2E_GATEWAY_URL=http://127.0.0.1:$gateway_port
export E2E_BOOKS_URL=http://127.0.0.1:$books_port
export E2E_ADMIN_EMAIL=admin@e2e.example.com
export E2E_ADMIN_PASSWORD=$admin_password
export E2E_COMPOSE_PROJECT=$project
export E2E_COMPOSE_ENV_FILE=$env_file
pytest=("$uv" run --frozen pytest -p no:cacheprovider)

step "end-to-end suite, 1 replica each"
"${pytest[@]}" tests/e2e --ignore=tests/e2e/faults -q

step "end-to-end suite, 2 replicas of users-service and orders-service"
compose up --detach --wait --wait-timeout 300 --no-build \
    --scale users-service=2 --scale orders-service=2
[[ $(compose ps --quiet users-service | wc -l) == 2 && $(compose ps --quiet orders-service | wc -l) == 2 ]] \
    || { echo "e2e-compose: scaling to 2 replicas failed" >&2; exit 1; }
"${pytest[@]}" tests/e2e --ignore=tests/e2e/faults -q

step "container faults, image hygiene, Kubernetes overlay (1 replica each)"
# A hanging container costs seconds in the fault cases, not the default ten (the suite above
# keeps the default: on a loaded machine a slow request may take more than 3 s).
printf 'UPSTREAM_TIMEOUT_S=3\n' >>"$env_file"
compose up --detach --wait --wait-timeout 300 --no-build \
    --scale users-service=1 --scale orders-service=1
"${pytest[@]}" tests/compose -q -rA

step "passed in $((SECONDS - started))s"
