#!/usr/bin/env bash
# Prepare a fresh checkout for `docker compose up`: write .env from .env.example with random
# passwords in every empty secret, and create the Ed25519 signing key and the key webhook
# secrets are sealed with. Never overwrites an existing .env or key. Needs bash and openssl.
#
#   bash deploy/init-secrets.sh            # in the repository root
#   ENV_FILE=/elsewhere/.env bash deploy/init-secrets.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
example="$root/.env.example"
env_file=${ENV_FILE:-$root/.env}
secrets=(POSTGRES_PASSWORD USERS_DB_PASSWORD ORDERS_DB_PASSWORD BOOKS_DB_PASSWORD WEBHOOKS_DB_PASSWORD REDIS_PASSWORD ADMIN_PASSWORD)

if [[ -e $env_file ]]; then
    echo "init-secrets: $env_file exists; leaving it alone"
else
    umask 077
    while IFS= read -r line; do
        name=${line%%=*}
        if [[ $line == *= && " ${secrets[*]} " == *" $name "* ]]; then
            line="$name=$(openssl rand -hex 24)"
        fi
        printf '%s\n' "$line"
    done <"$example" >"$env_file"
    echo "init-secrets: wrote $env_file (the admin password is in it)"
fi

# A key path as .env names it (NAME, else DEFAULT); relative to the folder of .env, the
# compose project's.
key_path() {
    local path
    path=$(sed -n "s/^$1=//p" "$env_file" | tail -n 1)
    path=${path:-$2}
    [[ $path == /* ]] || path="$(cd "$(dirname "$env_file")" && pwd)/${path#./}"
    printf '%s' "$path"
}

# Writes the key file PATH with COMMAND (given the path) unless it exists; WHAT names it.
create_key() {
    local path=$1 what=$2
    shift 2
    if [[ -e $path ]]; then
        echo "init-secrets: $path exists; leaving it alone"
        return
    fi
    mkdir -p "$(dirname "$path")"
    chmod 0700 "$(dirname "$path")"
    "$@" "$path"
    # Bind-mounted as is: the services (uid 10001) must read it; the 0700 folder keeps other
    # users of this machine out.
    chmod 0644 "$path"
    echo "init-secrets: created $what $path"
}

ed25519_key() { openssl genpkey -algorithm ed25519 -out "$1"; }
# A Fernet key: 32 random bytes in URL-safe base64.
fernet_key() { openssl rand -base64 32 | tr '+/' '-_' >"$1"; }

create_key "$(key_path JWT_PRIVATE_KEY_PATH ./deploy/secrets/jwt_private_key.pem)" \
    "the signing key" ed25519_key
create_key "$(key_path WEBHOOK_SECRETS_KEY_PATH ./deploy/secrets/webhook_secrets.key)" \
    "the webhook secrets key" fernet_key
