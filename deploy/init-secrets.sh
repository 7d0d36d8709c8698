#!/usr/bin/env bash
# Prepare a fresh checkout for `docker compose up`: write .env from .env.example with random
# passwords in every empty secret, and create the Ed25519 signing key. Never overwrites an
# existing .env or key. Needs bash and openssl.
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

# The key path as .env names it; relative to the folder of .env, the compose project's.
key_path=$(sed -n 's/^JWT_PRIVATE_KEY_PATH=//p' "$env_file" | tail -n 1)
key_path=${key_path:-./deploy/secrets/jwt_private_key.pem}
[[ $key_path == /* ]] || key_path="$(cd "$(dirname "$env_file")" && pwd)/${key_path#./}"
if [[ -e $key_path ]]; then
    echo "init-secrets: $key_path exists; leaving it alone"
else
    mkdir -p "$(dirname "$key_path")"
    chmod 0700 "$(dirname "$key_path")"
    openssl genpkey -algorithm ed25519 -out "$key_path"
    # Bind-mounted as is: the services (uid 10001) must read it; the 0700 folder keeps other
    # users of this machine out.
    chmod 0644 "$key_path"
    echo "init-secrets: created the signing key $key_path"
fi
