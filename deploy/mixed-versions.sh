#!/usr/bin/env bash
# make e2e-mixed: every service proven beside the previous release of the others. Builds the
# images of this checkout and, for each service, of its previous release
# (tools/previous_release.py: its last tag, else the commit before its version changed, else
# the merge base), starts ONE compose stack and swaps single services' images in it:
#   1. one service old, every other new, for each service in turn;
#   2. one service new, every other old, for each service in turn;
# running the smoke subset of the e2e suite (`pytest -m smoke`) for each combination. A swap
# deploys as an upgrade does: the service's migration job at that release first (an old job
# on the newer schema must succeed: expand/contract, docs/deployment-upgrades.md), then its
# containers (`up --no-deps --wait`). Then a rolling upgrade under load
# (deploy/rolling_upgrade.py): two orders-service replicas at the previous release replaced
# one at a time by this checkout's while orders are placed and read. Prints one table (also
# written to $E2E_KEEP_LOGS/matrix.md); exits non-zero when any combination failed.
#
# Environment: DOCKER (default /usr/bin/docker), E2E_PROJECT (default api-platform-mixed-<pid>),
# E2E_KEEP_LOGS (default var/e2e-mixed), E2E_MIXED_SERVICES (default: all five).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
project=${E2E_PROJECT:-api-platform-mixed-$$}
logs=${E2E_KEEP_LOGS:-$root/var/e2e-mixed}
new_tag=mixed-new
old_tag=mixed-old
# shellcheck source=deploy/compose-stack.sh
source "$root/deploy/compose-stack.sh"

# Each service: the variable its image tag is read from, its migration one-shot (- for
# none) and its containers (webhooks-service's image runs its dispatcher too).
declare -A tag_variable=(
    [gateway]=GATEWAY_IMAGE_TAG [users-service]=USERS_IMAGE_TAG
    [orders-service]=ORDERS_IMAGE_TAG [books-graphql]=BOOKS_IMAGE_TAG
    [webhooks-service]=WEBHOOKS_IMAGE_TAG
)
declare -A migrate_job=(
    [gateway]=- [users-service]=users-migrate [orders-service]=orders-migrate
    [books-graphql]=books-migrate [webhooks-service]=webhooks-migrate
)
declare -A containers=(
    [gateway]=gateway [users-service]=users-service [orders-service]=orders-service
    [books-graphql]=books-graphql [webhooks-service]="webhooks-service webhooks-dispatcher"
)
read -r -a services <<<"${E2E_MIXED_SERVICES:-gateway users-service orders-service books-graphql webhooks-service}"
declare -A old_commit old_version new_version running

trap remove_test_stack EXIT

step "Docker"
prepare_docker

step "configuration (.env with fresh secrets, free host ports)"
write_test_env "$new_tag"
# Health checked every 2 s (deploy/mixed-versions.compose.yml): each swap waits less.
export COMPOSE_FILE=docker-compose.yml:deploy/mixed-versions.compose.yml
registry=$(sed -n 's/^IMAGE_REGISTRY=//p' "$env_file")
registry=${registry:-api-platform}
build_args=()
for name in PYTHON_IMAGE UV_IMAGE; do
    value=$(sed -n "s/^$name=//p" "$env_file")
    [[ -z $value ]] || build_args+=(--build-arg "$name=$value")
done

step "previous releases (tools/previous_release.py)"
while read -r service commit version current; do
    old_commit[$service]=$commit
    old_version[$service]=$version
    new_version[$service]=$current
    printf '  %-17s %s at %s, now %s\n' "$service" "$version" "${commit:0:12}" "$current"
done < <("$uv" run --frozen python tools/previous_release.py --all)

step "build this checkout's images ($new_tag)"
compose build --progress plain >"$work/build.log" 2>&1 || { tail -60 "$work/build.log" >&2; exit 1; }

step "build the previous releases' images ($old_tag)"
for service in "${services[@]}"; do
    commit=${old_commit[$service]}
    tree=$work/tree-$commit
    if [[ ! -d $tree ]]; then  # one export per commit
        mkdir -p "$tree"
        git archive --format=tar "$commit" | tar -x -C "$tree"
    fi
    "$docker_cli" build --progress plain --target "$service" --build-arg "MEMBER=$service" \
        --build-arg "SERVICE_VERSION=${old_version[$service]}" "${build_args[@]}" --tag "$registry/$service:$old_tag" "$tree" \
        >>"$work/build-old.log" 2>&1 || { tail -60 "$work/build-old.log" >&2; exit 1; }
done

step "docker compose up --wait (every service new)"
compose up --detach --wait --wait-timeout 300 --no-build
for service in "${services[@]}"; do running[$service]=new; done
export_test_urls
pytest=("$uv" run --frozen pytest -p no:cacheprovider)

# The shell's view of a state: every service's image tag and release for compose and the
# suite (E2E_VERSION_USERS_SERVICE...: tests marked `needs` a newer release are deselected).
export_state() {
    local service variable
    for service in "${services[@]}"; do
        variable=E2E_VERSION_$(tr 'a-z-' 'A-Z_' <<<"$service")
        if [[ ${running[$service]} == old ]]; then
            export "${tag_variable[$service]}=$old_tag" "$variable=${old_version[$service]}"
        else
            export "${tag_variable[$service]}=$new_tag" "$variable=${new_version[$service]}"
        fi
    done
}

# Deploy a state ("service=old|new ...", the others unchanged): each changed service's
# migration job first, then its containers. Sets `migrations` to the jobs' outcome.
deploy() {
    local pair service changed=() names=() more=()
    migrations=ok
    for pair in "$@"; do
        service=${pair%%=*}
        if [[ ${running[$service]} != "${pair#*=}" ]]; then
            running[$service]=${pair#*=}
            changed+=("$service")
        fi
    done
    export_state
    ((${#changed[@]})) || return 0
    for service in "${changed[@]}"; do
        if [[ ${migrate_job[$service]} != - ]] \
            && ! compose run --rm --no-deps -T "${migrate_job[$service]}" >>"$work/migrate.log" 2>&1; then
            migrations="FAILED: ${migrate_job[$service]} at ${running[$service]}"
        fi
        read -r -a more <<<"${containers[$service]}"
        names+=("${more[@]}")
    done
    compose up --detach --no-deps --no-build --wait --wait-timeout 300 "${names[@]}"
}

table=$work/matrix.md
{
    printf '| %s ' "${services[@]}"
    printf '| migrations | smoke passed | failed |\n'
    printf '|---%.0s' "${services[@]}"
    printf '|---|---|---|\n'
} >"$table"
failures=0
combination=0

# One combination: deploy it, run the smoke subset, add a row.
check() {
    local row service result passed failed
    combination=$((combination + 1))
    step "combination $combination: $*"
    deploy "$@"
    "${pytest[@]}" tests/e2e -m smoke -q --junitxml="$work/junit-$combination.xml" || true
    result=$(python3 - "$work/junit-$combination.xml" <<'EOF'
import sys
import xml.etree.ElementTree as tree

suite = tree.parse(sys.argv[1]).getroot()
suite = suite if suite.tag == "testsuite" else suite[0]
count = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
failed = count["failures"] + count["errors"]
print(count["tests"] - failed - count["skipped"], failed + count["skipped"])
EOF
    ) || result="0 ?"
    read -r passed failed <<<"$result"
    row=""
    for service in "${services[@]}"; do
        if [[ ${running[$service]} == old ]]; then
            row+="| **old** ${old_version[$service]} "
        else
            row+="| new ${new_version[$service]} "
        fi
    done
    printf '%s| %s | %s | %s |\n' "$row" "$migrations" "$passed" "$failed" >>"$table"
    if [[ $failed != 0 || $passed == 0 || $migrations != ok ]]; then failures=$((failures + 1)); fi
}

# each_apart ONE REST: each service in turn at release ONE (old/new), every other at REST.
each_apart() {
    local one=$1 rest=$2 service other state
    for service in "${services[@]}"; do
        state=()
        for other in "${services[@]}"; do
            state+=("$other=$([[ $other == "$service" ]] && echo "$one" || echo "$rest")")
        done
        check "${state[@]}"
    done
}
each_apart old new
each_apart new old

step "rolling upgrade under load: 2 orders-service replicas, old to new"
deploy orders-service=old
compose up --detach --no-deps --no-build --wait --wait-timeout 300 \
    --scale orders-service=2 orders-service
rolling=ok
DOCKER=$docker_cli "$uv" run --frozen python deploy/rolling_upgrade.py orders-service \
    --migrate orders-migrate --tag-variable ORDERS_IMAGE_TAG --to "$new_tag" \
    | tee "$work/rolling-upgrade.json" || rolling=FAILED

mkdir -p "$logs"
{
    printf '## Mixed releases (smoke subset per combination)\n\n'
    cat "$table"
    printf '\n## Rolling upgrade under load (orders-service, 2 replicas): %s\n\n```json\n' "$rolling"
    cat "$work/rolling-upgrade.json"
    printf '```\n\nRuntime: %ss\n' "$((SECONDS - started))"
} >"$logs/matrix.md"
step "results ($logs/matrix.md)"
cat "$logs/matrix.md"
[[ $failures == 0 && $rolling == ok ]] || { echo "e2e-mixed: $failures combination(s) failed, rolling upgrade $rolling" >&2; exit 1; }
