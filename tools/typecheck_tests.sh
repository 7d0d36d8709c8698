#!/bin/sh
# Type-check every test suite. The suites share module names (each service has tests/conftest.py,
# tests/unit/conftest.py...), so mypy runs once per suite, rooted at the suite's folder and with
# its own cache.
set -e
for suite in shared users-service orders-service books-graphql webhooks-service gateway; do
	MYPYPATH=$suite mypy --explicit-package-bases --cache-dir ".mypy_cache/tests-$suite" "$suite/tests"
done
mypy --explicit-package-bases --cache-dir .mypy_cache/tests-root tests
