#!/usr/bin/env bash
# Pin every public image of an .env file by digest, so that a deployment runs exactly the
# images it was tested with, whatever is pushed under their tags later. Every public image
# of docker-compose.yml (and the Dockerfile's bases, through its build arguments) is one
# *_IMAGE variable of .env; this rewrites each as name:tag@sha256:<digest>, the digest the
# registry serves for the tag now (the multi-platform index's, read from `docker pull`).
# Docker then resolves the digest and ignores the tag, which stays for people to read.
#
#   bash deploy/pin-images.sh             # .env: pin each *_IMAGE that has no digest yet
#   bash deploy/pin-images.sh --refresh   # pin them all again to their tags' digests now
#   bash deploy/pin-images.sh --check     # exit 1 naming each *_IMAGE without a digest
#
# Env: ENV_FILE (default <repo>/.env), DOCKER (default docker). Pinning needs the registry
# (or a mirror); a local stand-in (no registry digest, e.g. shared/containers/prepare.sh's)
# is refused with its name. --check needs nothing but the file: a release gate.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_file=${ENV_FILE:-$root/.env}
docker=${DOCKER:-docker}
mode=pin
case ${1:-} in
    "") ;;
    --refresh) mode=refresh ;;
    --check) mode=check ;;
    *) echo "usage: pin-images.sh [--refresh | --check]" >&2; exit 2 ;;
esac
[[ -f $env_file ]] || { echo "pin-images: $env_file not found" >&2; exit 2; }

image_line='^([A-Z][A-Z0-9_]*_IMAGE)=(.*)$'
digest='@sha256:[0-9a-f]{64}$'
# Every image variable docker-compose.yml reads: one left out of the file means compose's
# default, a tag.
# (Words, not arrays: macOS's bash 3.2 runs this too.)
missing=""
while IFS= read -r name; do
    grep -qE "^$name=" "$env_file" || missing="$missing $name"
done < <(grep -oE '\$\{[A-Z][A-Z0-9_]*_IMAGE[:}]' "$root/docker-compose.yml" | sed 's/^..//; s/.$//' | sort -u)

if [[ $mode == check ]]; then
    unpinned=$missing
    while IFS= read -r line; do
        [[ $line =~ $image_line ]] || continue
        name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
        [[ $value =~ $digest ]] || unpinned="$unpinned $name"
    done <"$env_file"
    if [[ -n $unpinned ]]; then
        echo "pin-images: not pinned by digest in $env_file:$unpinned" >&2
        exit 1
    fi
    echo "pin-images: every image of $env_file is pinned by digest"
    exit 0
fi

if [[ -n $missing ]]; then
    echo "pin-images: $env_file does not name$missing; add each as NAME=name:tag" >&2
    exit 1
fi

# The digest the registry serves for reference (name:tag) now: pull it, then read the
# digest Docker recorded for that repository (as Docker writes Docker Hub's names). None
# for an image that came from no registry.
registry_digest() {
    local reference=$1 repository=${1%:*} recorded
    repository=${repository#docker.io/}
    repository=${repository#library/}
    "$docker" pull --quiet "$reference" >/dev/null || return 1
    recorded=$("$docker" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' \
        "$reference" | grep -m 1 "^$repository@sha256:" || true)
    [[ -n $recorded ]] || return 1
    printf '%s\n' "${recorded#*@}"
}

pinned_file=$(mktemp "$env_file.XXXXXX")
trap 'rm -f "$pinned_file"' EXIT
while IFS= read -r line; do
    if [[ $line =~ $image_line ]]; then
        name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
        if [[ -z $value ]]; then
            echo "pin-images: $name is empty; name its image (name:tag) first" >&2
            exit 1
        fi
        if [[ $mode == refresh || ! $value =~ $digest ]]; then
            reference=${value%@*}
            if ! sha=$(registry_digest "$reference"); then
                echo "pin-images: no registry digest for $reference ($name): the registry" \
                    "is out of reach, or the image is a local stand-in; pin where the" \
                    "registry (or a mirror of it) is reachable" >&2
                exit 1
            fi
            line="$name=$reference@$sha"
            echo "pin-images: $line" >&2
        fi
    fi
    printf '%s\n' "$line"
done <"$env_file" >"$pinned_file"
cat "$pinned_file" >"$env_file" # the file itself rewritten: its owner and mode stay
echo "pin-images: every image of $env_file is pinned by digest"
