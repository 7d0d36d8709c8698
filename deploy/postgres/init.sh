#!/usr/bin/env bash
# One database and one login role per service, each role owning only its own database.
#
# The postgres image runs this once, when it initialises an empty data directory
# (docker-compose.yml mounts it into /docker-entrypoint-initdb.d/). It can also be run by hand
# against any server as its superuser, e.g. for the Kubernetes dev overlay's database:
#   PGHOST=... PGUSER=postgres USERS_DB_PASSWORD=... ORDERS_DB_PASSWORD=... \
#     BOOKS_DB_PASSWORD=... WEBHOOKS_DB_PASSWORD=... bash deploy/postgres/init.sh
#
# Passwords come from the environment, never from this file. psql variables quote them
# (:'password'), so any character is safe here; the services' postgres:// URLs need them
# URL-safe, which `openssl rand -hex 24` is.
set -euo pipefail

create_service_database() {
    local name=$1 password_variable=$2
    local password=${!password_variable:-}
    if [[ -z $password ]]; then
        echo "init.sh: $password_variable is not set" >&2
        exit 1
    fi
    psql --no-psqlrc -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" \
        --dbname "${POSTGRES_DB:-postgres}" -v name="$name" -v password="$password" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'name', :'password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'name') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'name', :'name')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'name') \gexec
REVOKE ALL ON DATABASE :"name" FROM PUBLIC;
SQL
    echo "init.sh: database and role '$name' ready"
}

create_service_database users USERS_DB_PASSWORD
create_service_database orders ORDERS_DB_PASSWORD
create_service_database books BOOKS_DB_PASSWORD
create_service_database webhooks WEBHOOKS_DB_PASSWORD
