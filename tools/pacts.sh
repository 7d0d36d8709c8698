#!/usr/bin/env bash
# make pacts: every consumer's contract tests (each writes its pact and compares it with the one
# committed in contracts/pacts/), then every provider's verification of the committed pacts
# against the real provider. Non-zero at the first violation. The can-i-deploy of this
# repository: see docs/contracts.md.
#
#   tools/pacts.sh          check
#   tools/pacts.sh update   rewrite contracts/pacts/ from the consumer tests (PACTS_UPDATE=1)
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
SUITES=(orders-service gateway webhooks-service users-service books-graphql)

# One pytest process per suite: each suite's ORM state and fixtures are its own.
# run OPTIONS FILE...: nothing when the suite has no such file.
run() {
    local options=$1 files=() file
    shift
    for file in "$@"; do [ -f "$file" ] && files+=("$file"); done
    # shellcheck disable=SC2086  # OPTIONS is a list of words
    [ ${#files[@]} -eq 0 ] || "$UV" run --frozen pytest -q -p no:cacheprovider $options "${files[@]}"
}

shopt -s nullglob
echo "== consumers: the pacts they write =="
for suite in "${SUITES[@]}"; do
    if [ "${1:-}" = update ]; then
        PACTS_UPDATE=1 run "" "$suite"/tests/contract/test_*_pact.py
    else
        run "" "$suite"/tests/contract/test_*_pact.py
    fi
done
[ "${1:-}" = update ] && exit 0
echo "== providers: every committed pact verified against the real provider =="
for suite in "${SUITES[@]}"; do
    run -rP "$suite"/tests/contract/test_pact_provider.py
done
