#!/usr/bin/env bash
# Create (or update) every Secret the dev overlay references, from the same .env, signing key
# and NATS seeds that docker-compose uses, and the NATS cluster's route password that Docker
# Swarm uses (run deploy/init-secrets.sh first). Nothing here is committed.
#
#   bash deploy/k8s/create-dev-secrets.sh              # applies to the current kubectl context
#   DRY_RUN=1 bash deploy/k8s/create-dev-secrets.sh    # prints the Secrets instead
#
# Environment: ENV_FILE (default: .env in the repository root), NAMESPACE (default:
# api-platform-dev), KUBECTL (default: kubectl).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
env_file=${ENV_FILE:-$root/.env}
namespace=${NAMESPACE:-api-platform-dev}
kubectl=${KUBECTL:-kubectl}

[[ -r $env_file ]] || { echo "create-dev-secrets: no $env_file (run deploy/init-secrets.sh)" >&2; exit 1; }

# The value of NAME in the .env file (KEY=value lines; the last one wins, like compose).
value() {
    local found
    found=$(sed -n "s/^$1=//p" "$env_file" | tail -n 1)
    [[ -n $found ]] || { echo "create-dev-secrets: $1 is empty in $env_file" >&2; exit 1; }
    printf '%s' "$found"
}

# Checked here, in this shell: a failure inside $(...) below would not stop the script.
nats_users=(users-service orders-service webhooks-dispatcher)
nkey_variable() { printf 'NATS_%s_NKEY' "$(tr 'a-z-' 'A-Z_' <<<"$1")"; }
for name in POSTGRES_PASSWORD USERS_DB_PASSWORD ORDERS_DB_PASSWORD BOOKS_DB_PASSWORD \
    WEBHOOKS_DB_PASSWORD REDIS_PASSWORD ADMIN_EMAIL ADMIN_PASSWORD_PATH JWT_PRIVATE_KEY_PATH \
    WEBHOOK_SECRETS_KEY_PATH NATS_SEEDS_PATH; do
    value "$name" >/dev/null
done
for user in "${nats_users[@]}"; do
    value "$(nkey_variable "$user")" >/dev/null
done

# A key file's path as .env names it (else DEFAULT, the third argument, if given; relative to
# the folder of .env), checked readable.
key_file() {
    local path
    if [[ -n ${3:-} ]]; then
        path=$(sed -n "s/^$1=//p" "$env_file" | tail -n 1)
        path=${path:-$3}
    else
        path=$(value "$1")
    fi
    [[ $path == /* ]] || path="$(cd "$(dirname "$env_file")" && pwd)/${path#./}"
    [[ -r $path ]] || { echo "create-dev-secrets: no $2 at $path" >&2; exit 1; }
    printf '%s' "$path"
}
key_path=$(key_file JWT_PRIVATE_KEY_PATH "signing key")
webhook_key_path=$(key_file WEBHOOK_SECRETS_KEY_PATH "webhook secrets key")
admin_password_path=$(key_file ADMIN_PASSWORD_PATH "admin password")
# The NATS cluster's route password (init-secrets.sh's default path unless .env names one).
cluster_password_path=$(key_file NATS_CLUSTER_PASSWORD_PATH "NATS cluster password" \
    ./deploy/secrets/nats_cluster_password)
seeds_path=$(key_file NATS_SEEDS_PATH "NATS seeds folder")
for user in "${nats_users[@]}"; do
    [[ -r $seeds_path/$user.nk ]] || { echo "create-dev-secrets: no NATS seed at $seeds_path/$user.nk" >&2; exit 1; }
done

# The dev overlay's in-cluster datastores (deploy/k8s/overlays/dev/{postgres,redis}.yaml).
database_url() { printf 'postgres://%s:%s@postgres:5432/%s' "$1" "$(value "$2")" "$1"; }

secret() {
    local name=$1
    shift
    "$kubectl" create secret generic "$name" --namespace "$namespace" "$@" \
        --dry-run=client --output yaml
}

manifests() {
    "$kubectl" create namespace "$namespace" --dry-run=client --output yaml
    echo ---
    secret postgres-credentials \
        --from-literal=POSTGRES_PASSWORD="$(value POSTGRES_PASSWORD)" \
        --from-literal=USERS_DB_PASSWORD="$(value USERS_DB_PASSWORD)" \
        --from-literal=ORDERS_DB_PASSWORD="$(value ORDERS_DB_PASSWORD)" \
        --from-literal=BOOKS_DB_PASSWORD="$(value BOOKS_DB_PASSWORD)" \
        --from-literal=WEBHOOKS_DB_PASSWORD="$(value WEBHOOKS_DB_PASSWORD)"
    echo ---
    secret users-service-secrets \
        --from-literal=USERS_DATABASE_URL="$(database_url users USERS_DB_PASSWORD)" \
        --from-literal=ADMIN_EMAIL="$(value ADMIN_EMAIL)" \
        --from-file=ADMIN_PASSWORD="$admin_password_path" \
        --from-literal=REDIS_URL="redis://:$(value REDIS_PASSWORD)@redis:6379/0"
    echo ---
    secret jwt-signing-key --from-file=jwt_private_key.pem="$key_path"
    echo ---
    secret orders-service-secrets \
        --from-literal=ORDERS_DATABASE_URL="$(database_url orders ORDERS_DB_PASSWORD)"
    echo ---
    secret books-graphql-secrets \
        --from-literal=BOOKS_DATABASE_URL="$(database_url books BOOKS_DB_PASSWORD)"
    echo ---
    secret webhooks-service-secrets \
        --from-literal=WEBHOOKS_DATABASE_URL="$(database_url webhooks WEBHOOKS_DB_PASSWORD)"
    echo ---
    secret webhook-secrets-key --from-file=webhook_secrets.key="$webhook_key_path"
    echo ---
    secret redis-credentials --from-literal=REDIS_PASSWORD="$(value REDIS_PASSWORD)"
    echo ---
    secret gateway-secrets \
        --from-literal=REDIS_URL="redis://:$(value REDIS_PASSWORD)@redis:6379/0"
    # Each process's NATS user: its seed, mounted by its own pods only; the public keys, by
    # the nats server.
    for user in "${nats_users[@]}"; do
        echo ---
        secret "$user-nats" --from-file="$user.nk=$seeds_path/$user.nk"
    done
    echo ---
    secret nats-user-keys \
        --from-literal=NATS_USERS_SERVICE_NKEY="$(value NATS_USERS_SERVICE_NKEY)" \
        --from-literal=NATS_ORDERS_SERVICE_NKEY="$(value NATS_ORDERS_SERVICE_NKEY)" \
        --from-literal=NATS_WEBHOOKS_DISPATCHER_NKEY="$(value NATS_WEBHOOKS_DISPATCHER_NKEY)"
    # The NATS servers' routes: a file in their pods (NATS_CLUSTER_PASSWORD_FILE).
    echo ---
    secret nats-cluster --from-file=password="$cluster_password_path"
}

if [[ ${DRY_RUN:-} == 1 ]]; then
    manifests
else
    manifests | "$kubectl" apply --filename -
fi
