# The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# uv from PATH, else ~/.local/bin, else the private tools environment `make bootstrap` makes.
UV := $(shell command -v uv 2>/dev/null || { [ -x $(HOME)/.local/bin/uv ] && echo $(HOME)/.local/bin/uv; } || echo $(CURDIR)/.tools/bin/uv)

# Development defaults; production supplies its own through the environment.
export ADMIN_EMAIL ?= admin@example.com
export ADMIN_PASSWORD ?= dev-admin-password
export PYTHONUNBUFFERED := 1

.PHONY: help bootstrap run mail test test-prerequisites lint format e2e e2e-compose e2e-swarm e2e-mixed fuzz soak bench \
	pacts pacts-update contracts contracts-update configuration

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

bootstrap: ## Check prerequisites, get uv if missing (into ./.tools), install the locked dependencies
	@tools/bootstrap.sh

run: bootstrap ## Run the whole stack (gateway :8000, users :8001, orders :8002, books :4000, webhooks :8003)
	@mkdir -p var
	@echo "Starting the stack. Wait for the line 'ready: every service answers', then:"
	@echo "  gateway   http://localhost:8000"
	@echo "  API docs  http://localhost:8000/docs"
	@echo "  GraphiQL  http://localhost:4000/  (and http://localhost:8000/graphql in a browser)"
	@echo "  admin     $(ADMIN_EMAIL) / $(ADMIN_PASSWORD)"
	@echo "  webhooks  endpoints on loopback and private addresses allowed (WEBHOOK_ALLOW_PRIVATE=1)"
	@echo "  mail      http://localhost:8025  (what users-service sends; also: make mail)"
	@WEBHOOK_ALLOW_PRIVATE=$${WEBHOOK_ALLOW_PRIVATE:-1} SMTP_URL=$${SMTP_URL:-smtp://127.0.0.1:1025} \
		exec $(UV) run --frozen honcho start -f Procfile

mail: bootstrap ## The last messages `make run`'s mail catcher received, with their links
	@$(UV) run --frozen python -m api_devservers.mail_catcher list

test: bootstrap test-prerequisites lint ## Lint, type-check, then every test suite (unit, integration, end-to-end)
	@$(UV) run --frozen python tools/run_tests.py

test-prerequisites: ## Check the programs the test suites start (browser, node, redis, promtool)
	@tools/test_prerequisites.sh

# The suites' test modules share names (each has tests/conftest.py, tests/unit/conftest.py...),
# so mypy checks each suite on its own, rooted at its folder, with a cache of its own.
TEST_SUITES := shared devservers users-service orders-service books-graphql webhooks-service gateway

lint: bootstrap ## ruff (lint + format check) and mypy --strict, the tests included
	@$(UV) run --frozen ruff check .
	@$(UV) run --frozen ruff format --check .
	@$(UV) run --frozen mypy shared/src gateway/src users-service/src orders-service/src books-graphql/src \
		testkit/src webhooks-service/src devservers/src
	@for suite in $(TEST_SUITES); do \
		MYPYPATH=$$suite $(UV) run --frozen mypy --explicit-package-bases \
			--cache-dir .mypy_cache/tests-$$suite $$suite/tests || exit 1; \
	done
	@$(UV) run --frozen mypy --explicit-package-bases --cache-dir .mypy_cache/tests-root tests

format: bootstrap ## Apply ruff's fixes and formatting
	@$(UV) run --frozen ruff check --fix .
	@$(UV) run --frozen ruff format .


pacts: bootstrap ## Pact: consumers' contract tests, then each provider verifies the committed pacts
	@UV=$(UV) tools/pacts.sh

pacts-update: bootstrap ## Rewrite contracts/pacts/ from the consumer tests (review, then commit)
	@UV=$(UV) tools/pacts.sh update

contracts: bootstrap ## Check the contracts: snapshots (drift, unversioned breaks), the merged OpenAPI's lint, every pact
	@$(UV) run --frozen python tools/contracts/gate.py
	@$(UV) run --frozen python tools/contracts/lint.py
	@UV=$(UV) tools/pacts.sh

contracts-update: bootstrap ## Rewrite the contract snapshots (<service>/contracts/), then check them
	@$(UV) run --frozen python tools/contracts/gate.py --update

configuration: bootstrap ## Regenerate docs/configuration.md from the settings classes
	@$(UV) run --frozen python tools/configuration_docs.py

e2e: bootstrap ## End-to-end tests only (starts every service as a real process)
	@$(UV) run --frozen pytest tests/e2e

e2e-compose: bootstrap ## Build the images, run the e2e suite and container faults on compose
	@UV=$(UV) bash deploy/e2e-compose.sh

e2e-swarm: bootstrap ## A 3-node Docker Swarm here: the e2e suite through it, a rolling update and a node lost under load
	@UV=$(UV) bash deploy/e2e-swarm.sh

e2e-mixed: bootstrap ## Each service at its previous release beside the others, then a rolling upgrade under load (compose)
	@UV=$(UV) bash deploy/mixed-versions.sh

fuzz: bootstrap ## Property-based run of the whole API (schemathesis), longer than make test's
	@FUZZ_MAX_EXAMPLES=$${FUZZ_MAX_EXAMPLES:-200} $(UV) run --frozen pytest tests/e2e/test_api_properties.py

soak: bootstrap ## 10 minutes of mixed traffic at half capacity; writes docs/soak.md
	@$(UV) run --frozen python bench/soak.py

bench: bootstrap ## Benchmarks with peers side by side; writes docs/benchmarks.md
	@$(UV) run --frozen python bench/run.py
