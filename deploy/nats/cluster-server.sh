#!/bin/sh
# Starts one server of the NATS cluster (cluster.conf beside this file). Environment:
#   NATS_SERVER_NAME            this server's name (nats-1, nats-0...), unique and stable
#   NATS_PEERS                  host:port of every server's cluster port (6222), itself included
#   NATS_CLUSTER_PASSWORD_FILE  the routes' password (a secret), the same on every server
# The password goes from the file into the environment of this process only (never into the
# container's configuration, which `docker inspect` shows).
set -eu
here=$(dirname "$0")
NATS_CLUSTER_PASSWORD=$(cat "$NATS_CLUSTER_PASSWORD_FILE")
routes=""
for peer in $NATS_PEERS; do
    routes="$routes${routes:+, }nats-route://route:$NATS_CLUSTER_PASSWORD@$peer"
done
NATS_ROUTES="[$routes]"
export NATS_CLUSTER_PASSWORD NATS_ROUTES
exec nats-server --config="$here/cluster.conf" --jetstream --store_dir=/app/var/nats --port=4222 "$@"
