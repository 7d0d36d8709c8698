# shellcheck shell=bash disable=SC2154  # root, work, project, logs... are the sourcing script's
# Sourced by deploy/e2e-swarm.sh: a throw-away 3-node Docker Swarm on this machine. The host's
# engine is the manager; two workers are Docker-in-Docker containers (their own dockerd and
# /var/lib/docker); a local registry (Debian's docker-registry) on the host's bridge address
# carries the images to the workers. Defines swarm_create, registry_start, push_image,
# stack_remove, swarm_remove. Expects: root, work, project, logs, docker_cli (deploy/compose-stack.sh's
# step). Sets swarm_address, registry, workers.


workers=(node2 node3)
node_image=api-platform/swarm-node:bookworm
swarm_marker=/var/tmp/api-platform-e2e-swarm  # the node id of a swarm this script created
registry_pid=

docker() { "$docker_cli" "$@"; }
worker_container() { printf '%s-%s' "$project" "$1"; }
on_worker() { local node=$1; shift; docker exec "$(worker_container "$node")" docker "$@"; }

# The address the workers reach the host by: its bridge's (docker0).
bridge_address() { ip -4 -o addr show docker0 | awk '{split($4, a, "/"); print a[1]; exit}'; }

# dockerd must trust the registry (plain HTTP): added to /etc/docker/daemon.json and reloaded
# with SIGHUP (insecure-registries is one of the options dockerd reloads live).
trust_registry() {
    local cidr=$swarm_address/32
    if docker info --format '{{json .RegistryConfig.InsecureRegistryCIDRs}}' | grep -q "\"$cidr\""; then
        return
    fi
    mkdir -p /etc/docker
    python3 - "$cidr" <<'EOF'
import json, pathlib, sys
path = pathlib.Path("/etc/docker/daemon.json")
config = json.loads(path.read_text()) if path.exists() else {}
registries = config.setdefault("insecure-registries", [])
if sys.argv[1] not in registries:
    registries.append(sys.argv[1])
path.write_text(json.dumps(config, indent=2) + "\n")
EOF
    kill -HUP "$(pidof dockerd)"
    for _ in $(seq 1 20); do
        docker info --format '{{json .RegistryConfig.InsecureRegistryCIDRs}}' | grep -q "\"$cidr\"" && return
        sleep 0.5
    done
    echo "$0: dockerd did not take $cidr as an insecure registry (/etc/docker/daemon.json)" >&2
    return 1
}

# A worker's image: Debian with docker.io, made once (mmdebstrap, as prepare.sh makes the
# base images: no registry is needed).
node_image_build() {
    docker image inspect "$node_image" >/dev/null 2>&1 && return
    local mirrors
    # shellcheck disable=SC2016  # apt's own $(FIELD) placeholders, not the shell's
    mapfile -t mirrors < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
        sort -u | awk '{print "deb " $1 " " $2 " main"}')
    ((${#mirrors[@]})) || mirrors=("deb http://deb.debian.org/debian bookworm main")
    mmdebstrap --quiet --variant=minbase \
        --include=docker.io,iptables,ca-certificates,procps,iproute2 \
        bookworm "$work/node.tar" "${mirrors[@]}"
    docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        "$work/node.tar" "$node_image" >/dev/null
    rm -f "$work/node.tar"
}

# A worker node: its own dockerd in a container. Not --privileged (these VMs refuse it): every
# capability but SYS_RESOURCE, no seccomp/apparmor confinement, every device, the host's
# cgroups, its own /var/lib/docker.
worker_start() {
    local node=$1 container
    container=$(worker_container "$node")
    docker run --detach --name "$container" --hostname "$node" \
        --cap-add ALL --cap-drop SYS_RESOURCE \
        --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
        --security-opt systempaths=unconfined --device-cgroup-rule 'a *:* rwm' \
        --volume /sys/fs/cgroup:/sys/fs/cgroup:rw --volume "$container-lib:/var/lib/docker" \
        "$node_image" dockerd --storage-driver=overlay2 --insecure-registry "$swarm_address/32" \
        --cgroup-parent="/$container" >/dev/null
}

# A swarm left by a run that was killed before its cleanup: removed. Any other is refused.
swarm_leftover_remove() {
    [[ $(docker info --format '{{.Swarm.LocalNodeState}}') == inactive ]] && return
    if [[ -r $swarm_marker && $(docker info --format '{{.Swarm.NodeID}}') == "$(cat "$swarm_marker")" ]]; then
        echo "$0: removing the swarm an earlier run left" >&2
        stack_remove "$project"
        swarm_remove
        return
    fi
    echo "$0: this Docker engine is in a swarm already; make e2e-swarm makes its own" >&2
    return 1
}

# The swarm: the host as manager, the workers joined, the nodes labelled for NATS's servers
# (deploy/swarm/stack.compose.yml). Sets swarm_address.
swarm_create() {
    local node token i=2
    swarm_address=$(bridge_address)
    [[ -n $swarm_address ]] || { echo "$0: no docker0 bridge address" >&2; return 1; }
    swarm_leftover_remove
    for node in "${workers[@]}"; do  # a killed run's workers, if any
        docker rm --force --volumes "$(worker_container "$node")" >/dev/null 2>&1 || true
    done
    trust_registry
    node_image_build
    docker swarm init --advertise-addr "$swarm_address" >/dev/null
    docker info --format '{{.Swarm.NodeID}}' >"$swarm_marker"
    docker node update --label-add api-platform.nats=1 "$(docker info --format '{{.Swarm.NodeID}}')" >/dev/null
    token=$(docker swarm join-token --quiet worker)
    for node in "${workers[@]}"; do worker_start "$node"; done
    for node in "${workers[@]}"; do
        for _ in $(seq 1 60); do on_worker "$node" info >/dev/null 2>&1 && break; sleep 1; done
        on_worker "$node" swarm join --token "$token" "$swarm_address:2377" >/dev/null
        docker node update --label-add "api-platform.nats=$i" "$node" >/dev/null
        i=$((i + 1))
    done
    docker node ls
}

# The registry, on the bridge address; stopped by its pid. Sets registry. Its storage outlives
# the run (like Docker's own image store): a push sends only the layers it lacks.
registry_start() {
    local registry_port storage=${E2E_SWARM_REGISTRY_DIR:-/var/tmp/api-platform-e2e-registry}
    registry_port=$(free_port)
    registry=$(bridge_address):$registry_port
    mkdir -p "$storage"
    cat >"$work/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $storage}}
http: {addr: "$registry"}
EOF
    docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
    registry_pid=$!
    for _ in $(seq 1 30); do
        curl --silent --fail --output /dev/null "http://$registry/v2/" && return
        sleep 0.5
    done
    cat "$work/registry.log" >&2
    return 1
}

# push_image LOCAL REMOTE: the local image, as REMOTE in the registry.
push_image() {
    docker tag "$1" "$2"
    docker push --quiet "$2" >/dev/null
}

# stack_remove STACK: the stack and its volumes on this node (the manager's: PostgreSQL's and
# a NATS server's; the workers' go with them). `docker stack rm` keeps volumes, and returns
# before the containers are gone.
stack_remove() {
    local stack=$1 volumes
    docker stack rm "$stack" >/dev/null 2>&1 || true
    for _ in $(seq 1 60); do
        [[ -z $(docker ps --all --quiet --filter "label=com.docker.stack.namespace=$stack") ]] && break
        sleep 1
    done
    mapfile -t volumes < <(docker volume ls --quiet --filter "label=com.docker.stack.namespace=$stack")
    ((${#volumes[@]} == 0)) || docker volume rm "${volumes[@]}" >/dev/null
}

# Everything swarm_create and registry_start made: the workers and their volumes, the swarm,
# the registry process (by its pid). Safe to call twice.
swarm_remove() {
    local node
    for node in "${workers[@]}"; do
        docker rm --force --volumes "$(worker_container "$node")" >/dev/null 2>&1 || true
        docker volume rm "$(worker_container "$node")-lib" >/dev/null 2>&1 || true
    done
    docker swarm leave --force >/dev/null 2>&1 || true
    rm -f "$swarm_marker"
    if [[ -n $registry_pid ]]; then
        kill "$registry_pid" 2>/dev/null || true
        wait "$registry_pid" 2>/dev/null || true
        registry_pid=
    fi
}
