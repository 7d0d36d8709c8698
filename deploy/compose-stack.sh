# shellcheck shell=bash disable=SC2154,SC2034  # variables from and for the sourcing script
# Sourced by deploy/e2e-compose.sh, deploy/mixed-versions.sh and deploy/e2e-swarm.sh: a
# throw-away compose stack for tests. Defines compose, free_port, step, prepare_docker,
# write_test_env, export_test_urls and remove_test_stack. Expects: root (the checkout),
# project (compose project name), logs (where the containers' logs are kept). Sets:
# docker_cli (DOCKER, else Debian's CLI, which has BuildKit), uv (UV: make passes the uv it
# uses), work (a new temporary folder), env_file (its .env, under work), started.

docker_cli=${DOCKER:-/usr/bin/docker}
uv=${UV:-$(command -v uv || echo "$root/.tools/bin/uv")}
export DOCKER_BUILDKIT=1
work=$(mktemp -d)
env_file=$work/.env
started=$SECONDS
current_step="(before the first step)"

# Each step is announced, and remembered: a failure's last line names the step it ended in
# (CI keeps the head and the tail of a long output).
step() { current_step=$*; printf '\n== %s (at %ss)\n' "$*" "$((SECONDS - started))"; }
compose() { "$docker_cli" compose --project-name "$project" --env-file "$env_file" "$@"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The EXIT trap of a script that starts a stack (`trap remove_test_stack EXIT`): keeps every
# container's log in $logs, shows the states and log tails when the script failed, removes
# the stack with its volumes and the temporary folder, and exits with the script's status.
remove_test_stack() {
    local status=$? name failed_in=$current_step
    name=$(basename "$0" .sh)
    if [[ -s $env_file ]]; then
        mkdir -p "$logs"
        compose logs --no-color --timestamps >"$logs/containers.log" 2>&1 || true
        if [[ $status != 0 ]]; then
            echo "$name: FAILED (exit $status); container states and log tails follow." >&2
            compose ps --all >&2 || true
            compose logs --no-color --tail 40 >&2 || true
            echo "$name: every container's whole log: $logs/containers.log" >&2
        fi
        step "docker compose down -v"
        compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    [[ $status == 0 ]] || echo "$name: FAILED in the step: $failed_in" >&2
    exit "$status"
}

# Docker with Compose v2. These machines reach no container registry: the handout's script
# builds local stand-ins for the public base images. Anywhere else Docker pulls them as usual.
prepare_docker() {
    if ! curl --silent --output /dev/null --max-time 5 https://registry-1.docker.io/v2/; then
        local prepare=$root/../shared/containers/prepare.sh
        [[ -r $prepare ]] || { echo "$0: no registry reachable and no $prepare" >&2; return 1; }
        bash "$prepare" >"$work/prepare.log" 2>&1 || { tail -30 "$work/prepare.log" >&2; return 1; }
    fi
    "$docker_cli" compose version >/dev/null || { echo "$0: needs Docker Compose v2" >&2; return 1; }
}

# The .env: fresh secrets, free host ports, IMAGE_TAG=$1, the limits out of the tests' way,
# the services' versions (the images' labels).
# Sets gateway_port, books_port, admin_password.
write_test_env() {
    local image_tag=$1 line name
    ENV_FILE=$env_file bash "$root/deploy/init-secrets.sh" >/dev/null
    gateway_port=$(free_port)
    books_port=$(free_port)
    local overrides=(
        "JWT_PRIVATE_KEY_PATH=$work/deploy/secrets/jwt_private_key.pem"
        "ADMIN_PASSWORD_PATH=$work/deploy/secrets/admin_password"
        "WEBHOOK_SECRETS_KEY_PATH=$work/deploy/secrets/webhook_secrets.key"
        "NATS_SEEDS_PATH=$work/deploy/secrets/nats"
        "IMAGE_TAG=$image_tag"
        "GATEWAY_PUBLISHED_PORT=$gateway_port"
        "BOOKS_PUBLISHED_PORT=$books_port"
        "ADMIN_EMAIL=admin@e2e.example.com"
        # The tests read the schema with GraphQL clients, directly and through the gateway.
        "BOOKS_INTROSPECTION=true"
        "BOOKS_GRAPHIQL=true"
        # Every test logs in from 127.0.0.1; the limits themselves are tested in the gateway.
        "RATE_LIMIT_RPS=100000"
        "RATE_LIMIT_BURST=100000"
        "API_KEY_RATE_LIMIT_RPS=100000"
        "API_KEY_RATE_LIMIT_BURST=100000"
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
    local versions
    mapfile -t versions < <(bash "$root/deploy/service-versions.sh")
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
}

# What the e2e suite (tests/e2e/conftest.py) and tests/compose read to reach the stack.
export_test_urls() {
    export E2E_GATEWAY_URL=http://127.0.0.1:$gateway_port
    export E2E_BOOKS_URL=http://127.0.0.1:$books_port
    export E2E_ADMIN_EMAIL=admin@e2e.example.com
    export E2E_ADMIN_PASSWORD=$admin_password
    export E2E_COMPOSE_PROJECT=$project
    export E2E_COMPOSE_ENV_FILE=$env_file
}
