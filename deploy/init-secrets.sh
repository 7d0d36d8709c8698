#!/usr/bin/env bash
# Prepare a fresh checkout for `docker compose up`: write .env from .env.example with random
# passwords in every empty secret, create the Ed25519 signing key, the key webhook secrets
# are sealed with, the admin's first password (a file, mounted as a secret: never an
# environment variable), the NATS cluster's route password (Swarm, Kubernetes), and an NKey
# seed for each process that connects to NATS (its public key goes into .env, for the nats
# service). Never overwrites an existing .env, key or seed.
# Needs bash, openssl and coreutils (base32, od).
#
#   bash deploy/init-secrets.sh            # in the repository root
#   ENV_FILE=/elsewhere/.env bash deploy/init-secrets.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
example="$root/.env.example"
env_file=${ENV_FILE:-$root/.env}
secrets=(POSTGRES_PASSWORD USERS_DB_PASSWORD ORDERS_DB_PASSWORD BOOKS_DB_PASSWORD WEBHOOKS_DB_PASSWORD REDIS_PASSWORD)

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
    echo "init-secrets: wrote $env_file"
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
# The admin's first password, as .env names its file.
random_password() { (umask 077 && openssl rand -hex 24 >"$1"); }
create_key "$(key_path ADMIN_PASSWORD_PATH ./deploy/secrets/admin_password)" \
    "the admin's first password" random_password
# The password NATS servers of a cluster (Docker Swarm, Kubernetes) know each other by.
create_key "$(key_path NATS_CLUSTER_PASSWORD_PATH ./deploy/secrets/nats_cluster_password)" \
    "the NATS cluster's route password" random_password

# --- NATS users: an NKey seed per process that connects to NATS, mounted as its compose
# secret, and the seed's public key as NATS_<USER>_NKEY in .env, which the nats service's
# config reads (deploy/nats/nats.conf). An NKey is an Ed25519 key, base32 with a prefix and
# a CRC-16 (github.com/nats-io/nkeys); made here with openssl, as `nk -gen user` would.

hex() { od -An -v -tx1 | tr -d ' \n'; }                    # stdin's bytes, as hex
unhex() { # hex, as bytes on stdout
    local i
    for ((i = 0; i < ${#1}; i += 2)); do printf '%b' "\\x${1:i:2}"; done
}

crc16() { # CRC-16/XMODEM of the hex bytes $1, as two bytes little-endian (hex)
    local crc=0 i bit
    for ((i = 0; i < ${#1}; i += 2)); do
        crc=$((crc ^ (16#${1:i:2} << 8)))
        for ((bit = 0; bit < 8; bit++)); do
            if ((crc & 0x8000)); then crc=$(((crc << 1) ^ 0x1021)); else crc=$((crc << 1)); fi
            crc=$((crc & 0xffff))
        done
    done
    printf '%02x%02x' $((crc & 0xff)) $((crc >> 8))
}

nkey() { unhex "$1$(crc16 "$1")" | base32 | tr -d '\n='; }  # hex bytes, as NKey text

new_user_seed() { # "SU...": the prefix bytes of a seed of a user, then the private key
    nkey "9500$(openssl genpkey -algorithm ed25519 -outform DER | tail -c 32 | hex)"
}

public_key() { # "U...": the public key of the user seed $1
    local private public
    private=$(printf '%s======' "$1" | base32 -d | head -c 34 | tail -c 32 | hex)
    # The private key as PKCS#8 DER (its fixed Ed25519 header), for openssl to derive from.
    public=$(unhex "302e020100300506032b657004220420$private" |
        openssl pkey -inform DER -pubout -outform DER | tail -c 32 | hex)
    nkey "a0$public"
}

seeds_path=$(sed -n 's/^NATS_SEEDS_PATH=//p' "$env_file" | tail -n 1)
seeds_path=${seeds_path:-./deploy/secrets/nats}
[[ $seeds_path == /* ]] || seeds_path="$(cd "$(dirname "$env_file")" && pwd)/${seeds_path#./}"
mkdir -p "$seeds_path"
chmod 0700 "$seeds_path"
for user in users-service orders-service webhooks-dispatcher; do
    seed_file=$seeds_path/$user.nk
    if [[ -e $seed_file ]]; then
        echo "init-secrets: $seed_file exists; leaving it alone"
    else
        new_user_seed >"$seed_file"
        # Bind-mounted as is, like the signing key: readable by the services' uid 10001.
        chmod 0644 "$seed_file"
        echo "init-secrets: created the NATS seed of $user, $seed_file"
    fi
    variable=NATS_$(tr 'a-z-' 'A-Z_' <<<"$user")_NKEY
    key=$(public_key "$(cat "$seed_file")")
    # The one kind of line init-secrets keeps true in an existing .env: a seed's own key.
    if grep -q "^$variable=" "$env_file"; then
        if ! grep -qx "$variable=$key" "$env_file"; then
            sed -i "s/^$variable=.*/$variable=$key/" "$env_file"
            echo "init-secrets: set $variable in $env_file to $user's public key"
        fi
    else
        printf '%s=%s\n' "$variable" "$key" >>"$env_file"
        echo "init-secrets: added $variable, $user's public key, to $env_file"
    fi
done
