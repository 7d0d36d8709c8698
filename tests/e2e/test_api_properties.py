"""Property-based tests of the whole public API, through the gateway (schemathesis).

Every operation of the gateway's merged ``/openapi.json`` gets generated requests, valid and
invalid (schemathesis's positive and negative modes, in its examples, coverage, fuzzing and
stateful phases), once with an admin's bearer token and once with a customer's. Every answer
must have a documented status, content type, headers and body; none may be a 5xx.

``make test`` runs the bounded run (``BOUNDED_MAX_EXAMPLES`` per operation and phase, a fixed
seed); ``make fuzz`` sets ``FUZZ_MAX_EXAMPLES`` for a longer run with a random seed
(``FUZZ_SEED`` replays one).
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from .conftest import Stack

BOUNDED_MAX_EXAMPLES = 25
BOUNDED_SEED = 20261122
MIN_CASES_PER_ROLE = 500  # two roles: at least 1000 cases in the bounded run
FUZZ_MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES") or 0)
MAX_EXAMPLES = FUZZ_MAX_EXAMPLES or BOUNDED_MAX_EXAMPLES
SEED = int(os.environ.get("FUZZ_SEED") or 0) or (
    secrets.randbelow(2**31) if FUZZ_MAX_EXAMPLES else BOUNDED_SEED
)
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "ignored_auth",  # an operation that declares a bearer token refuses a request without one
    "unsupported_method",  # an undocumented method is 405 with Allow
)
PASSWORD = "correct horse battery"


@dataclass
class Run:
    """What one schemathesis run did: cases, statuses, and the first case of each failure."""

    role: str
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        statuses = " ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        return (
            f"schemathesis {schemathesis.__version__} as {self.role}: {self.cases} cases in "
            f"{self.seconds:.0f} s (max_examples={MAX_EXAMPLES}, seed={SEED}); {statuses}"
        )

    def report(self) -> str:
        lines = [self.summary()]
        for (operation, title), detail in sorted(self.failures.items()):
            lines.append(f"--- {operation}: {title}\n{detail}")
        lines.extend(f"--- error: {error}" for error in self.errors)
        return "\n".join(lines)


def _bearer_token(stack: Stack, role: str) -> str:
    """A token of the stack's admin, or of a customer signed up for the run."""
    with httpx.Client(base_url=stack.gateway_url, timeout=15.0) as client:
        if role == "admin":
            email, password = stack.admin_email, stack.admin_password
        else:
            email, password = f"fuzz-{uuid.uuid4().hex[:12]}@example.com", PASSWORD
            signed_up = client.post(
                "/api/users", json={"name": "Fuzzed", "email": email, "password": password}
            )
            assert signed_up.status_code == 201, signed_up.text
        response = client.post("/api/auth/token", json={"email": email, "password": password})
        assert response.status_code == 200, response.text
        token: str = response.json()["data"]["accessToken"]
        return token


def run_schemathesis(stack: Stack, role: str) -> Run:
    """Every phase of schemathesis over the merged document, with a ``role`` bearer token."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "database": "none"},
            "auth": {"openapi": {"bearerAuth": {"bearer": _bearer_token(stack, role)}}},
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
            "request-timeout": 15,
        }
    )
    schema = schemathesis.openapi.from_url(f"{stack.gateway_url}/openapi.json", config=config)
    run = Run(role)
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished) and event.is_test_scenario:
            _record(run, event)
        elif isinstance(event, events.NonFatalError):
            run.errors.append(f"{event.label}: {event.value!r}")
        elif isinstance(event, events.FatalError):
            run.errors.append(f"fatal: {event.exception!r}")
    run.seconds = time.monotonic() - started
    return run


def _record(run: Run, scenario: events.ScenarioFinished) -> None:
    recorder = scenario.recorder
    run.cases += len(recorder.cases)
    for interaction in recorder.interactions.values():
        if interaction.response is not None:
            run.statuses[interaction.response.status_code] += 1
    for case_id, checks in recorder.checks.items():
        for check in checks:
            if check.status is not Status.FAILURE or check.failure_info is None:
                continue
            failure = check.failure_info.failure
            operation = recorder.cases[case_id].value.operation.label
            run.failures.setdefault(
                (operation, f"{check.name}: {failure.title}"),
                f"{failure.message}\n{check.failure_info.code_sample}",
            )


@pytest.fixture
def summaries(capsys: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    """Lines for the terminal, shown whether the test passes or not (the count of cases)."""
    lines: list[str] = []
    yield lines
    with capsys.disabled():
        for line in lines:
            print(f"\n{line}")


@pytest.fixture
def restore_admin(stack: Stack) -> Iterator[None]:
    """An admin's run may change or delete any user, the configured admin included: restart
    users-service afterwards, which ensures that admin again, for the tests that follow."""
    yield
    stack.restart("users")
    stack.wait_ready("gateway")


@pytest.mark.processes  # restarts users-service afterwards, to restore the admin it may delete
def test_every_operation_answers_an_admin_only_as_documented(
    stack: Stack, restore_admin: None, summaries: list[str]
) -> None:
    run = run_schemathesis(stack, "admin")
    summaries.append(run.summary())

    assert not run.failures, run.report()
    assert not run.errors, run.report()
    assert run.cases >= MIN_CASES_PER_ROLE, run.summary()


def test_every_operation_answers_a_customer_only_as_documented(
    stack: Stack, summaries: list[str]
) -> None:
    run = run_schemathesis(stack, "customer")
    summaries.append(run.summary())

    assert not run.failures, run.report()
    assert not run.errors, run.report()
    assert run.cases >= MIN_CASES_PER_ROLE, run.summary()
