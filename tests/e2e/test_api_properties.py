"""Property-based tests of the whole public API, through the gateway (schemathesis).

Every operation of the gateway's merged ``/openapi.json`` gets generated requests, valid and
invalid (schemathesis's positive and negative modes, in its examples, coverage, fuzzing and
stateful phases), once with an admin's bearer token and once with a customer's. Every answer
must have a documented status, content type, headers and body; none may be a 5xx. A
schema-valid request must be accepted (``positive_data_acceptance``), unless
``positive_data_baseline.toml`` names the refusal and the rule beyond the schema behind it;
an entry every run meets must still happen.

``make test`` runs the bounded run (``BOUNDED_MAX_EXAMPLES`` per operation and phase, a fixed
seed); ``make fuzz`` sets ``FUZZ_MAX_EXAMPLES`` for a longer run with a random seed
(``FUZZ_SEED`` replays one).
"""

from __future__ import annotations

import json
import os
import secrets
import time
import tomllib
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import schemathesis
from schemathesis.engine import Status, events, from_schema

from api_testkit.stack import Stack

BOUNDED_MAX_EXAMPLES = 25
BOUNDED_SEED = 20261122
MIN_CASES_PER_ROLE = 500  # two roles: at least 1000 cases in the bounded run
FUZZ_MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES") or 0)
MAX_EXAMPLES = FUZZ_MAX_EXAMPLES or BOUNDED_MAX_EXAMPLES
SEED = int(os.environ.get("FUZZ_SEED") or 0) or (
    secrets.randbelow(2**31) if FUZZ_MAX_EXAMPLES else BOUNDED_SEED
)
POSITIVE_DATA_ACCEPTANCE = "positive_data_acceptance"
BODY_EXCERPT = 400  # bytes of a refusal's body shown with its request
BASELINE = Path(__file__).with_name("positive_data_baseline.toml")
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "ignored_auth",  # an operation that declares a bearer token refuses a request without one
    "unsupported_method",  # an undocumented method is 405 with Allow
    POSITIVE_DATA_ACCEPTANCE,  # a schema-valid request is accepted, unless BASELINE says why
)
PASSWORD = "correct horse battery"
ENDLESS_OPERATIONS = ("streamEvents",)  # GET /api/events/stream (Server-Sent Events)


@dataclass(frozen=True, order=True)
class Rejection:
    """A schema-valid request refused: by which operation, with which status and error code."""

    operation: str
    status: int
    code: str

    def __str__(self) -> str:
        return f"{self.operation} → {self.status} {self.code}"


@dataclass
class Run:
    """What one schemathesis run did: cases, statuses, the first case of each failure, and
    of each rejection of a schema-valid request (with how often it happened)."""

    role: str
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    rejections: dict[Rejection, str] = field(default_factory=dict)
    rejection_counts: Counter[Rejection] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        statuses = " ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        return (
            f"schemathesis {schemathesis.__version__} as {self.role}: {self.cases} cases in "
            f"{self.seconds:.0f} s (max_examples={MAX_EXAMPLES}, seed={SEED}); {statuses}"
        )

    def rejections_summary(self) -> str:
        counts = ", ".join(
            f"{rejection}: {n}" for rejection, n in sorted(self.rejection_counts.items())
        )
        return f"schema-valid requests refused as {self.role}: {counts or 'none'}"

    def report(self) -> str:
        lines = [self.summary()]
        for (operation, title), detail in sorted(self.failures.items()):
            lines.append(f"--- {operation}: {title}\n{detail}")
        lines.extend(f"--- error: {error}" for error in self.errors)
        return "\n".join(lines)

    def unexplained(self, baseline: Mapping[Rejection, Known]) -> str:
        """The rejections the baseline does not give a reason for, with their first case."""
        lines = [self.summary(), f"schema-valid requests refused, not in {BASELINE.name}:"]
        for rejection, sample in sorted(self.rejections.items()):
            if rejection not in baseline:
                lines.append(f"--- {rejection}\n{sample}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Known:
    """A baseline entry: why the rejection happens, and whether every run meets it."""

    reason: str
    always: bool


def baseline_for(role: str) -> dict[Rejection, Known]:
    """The rejections ``BASELINE`` lists for a ``role``'s runs."""
    entries = tomllib.loads(BASELINE.read_text())["rejection"]
    return {
        Rejection(entry["operation"], entry["status"], entry["code"]): Known(
            entry["reason"], entry["always"]
        )
        for entry in entries
        if role in entry["roles"]
    }


def _credentials(stack: Stack, role: str) -> dict[str, str]:
    """The login of the stack's admin, or of a customer signed up for the run."""
    if role == "admin":
        return {"email": stack.admin_email, "password": stack.admin_password}
    email = f"fuzz-{uuid.uuid4().hex[:12]}@example.com"
    with httpx.Client(base_url=stack.gateway_url, timeout=15.0) as client:
        signed_up = client.post(
            "/api/users", json={"name": "Fuzzed", "email": email, "password": PASSWORD}
        )
    assert signed_up.status_code == 201, signed_up.text
    return {"email": email, "password": PASSWORD}


def _bearer_auth(stack: Stack, role: str) -> dict[str, object]:
    """A bearer token fetched by logging in, and fetched again after a 401.

    The run may end its own sessions (``POST /api/auth/logout-all`` is one of the operations
    it calls): the services then refuse the token, as they must, and the operations after it
    would test nothing but that refusal. A 401 makes schemathesis log in again for the next
    request; every answer is still checked.
    """
    return {
        "path": "/api/auth/token",
        "method": "post",
        "payload": _credentials(stack, role),
        "extract_selector": "/data/accessToken",
        "retry_on": [401],
    }


def run_schemathesis(stack: Stack, role: str) -> Run:
    """Every phase of schemathesis over the merged document, with a ``role`` bearer token."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "database": "none"},
            "auth": {"dynamic": {"openapi": {"bearerAuth": _bearer_auth(stack, role)}}},
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
            "request-timeout": 15,
        }
    )
    document = schemathesis.openapi.from_url(f"{stack.gateway_url}/openapi.json", config=config)
    # A stream's answer never ends, so it cannot be checked as a response: its refusals and
    # frames are tested by tests/e2e/test_event_stream.py and webhooks-service's own tests.
    schema = document.exclude(operation_id=list(ENDLESS_OPERATIONS))
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
            response = recorder.interactions[case_id].response
            if check.name == POSITIVE_DATA_ACCEPTANCE and response is not None:
                rejection = Rejection(
                    operation, response.status_code, _error_code(response.content)
                )
                answer = response.content[:BODY_EXCERPT].decode(errors="replace")
                run.rejections.setdefault(rejection, f"{check.failure_info.code_sample}\n{answer}")
                run.rejection_counts[rejection] += 1
                continue
            run.failures.setdefault(
                (operation, f"{check.name}: {failure.title}"),
                f"{failure.message}\n{check.failure_info.code_sample}",
            )


def _error_code(body: bytes) -> str:
    """The contract error's code, or GraphQL's first ``extensions.code``, or "-"."""
    try:
        document = json.loads(body)
    except ValueError:
        return "-"
    if not isinstance(document, dict):
        return "-"
    error = document.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return str(error["code"])
    errors = document.get("errors")
    first = errors[0] if isinstance(errors, list) and errors else None
    extensions = first.get("extensions") if isinstance(first, dict) else None
    code = extensions.get("code") if isinstance(extensions, dict) else None
    return code if isinstance(code, str) else "-"


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
    summaries.extend([run.summary(), run.rejections_summary()])

    assert not run.failures, run.report()
    assert not run.errors, run.report()
    assert run.cases >= MIN_CASES_PER_ROLE, run.summary()
    assert_rejections_as_in_baseline(run)


def test_every_operation_answers_a_customer_only_as_documented(
    stack: Stack, summaries: list[str]
) -> None:
    run = run_schemathesis(stack, "customer")
    summaries.extend([run.summary(), run.rejections_summary()])

    assert not run.failures, run.report()
    assert not run.errors, run.report()
    assert run.cases >= MIN_CASES_PER_ROLE, run.summary()
    assert_rejections_as_in_baseline(run)


def assert_rejections_as_in_baseline(run: Run) -> None:
    """Every refused schema-valid request is in the baseline, and every entry of this role
    that every run meets still happens: a rule the schema learns to say leaves the baseline
    with it. (Entries only some longer runs meet, by chance, cannot be held to that.)"""
    baseline = baseline_for(run.role)
    assert run.rejections.keys() <= baseline.keys(), run.unexplained(baseline)
    always = {rejection for rejection, known in baseline.items() if known.always}
    gone = sorted(always - run.rejections.keys())
    assert not gone, f"{BASELINE.name} lists rejections that no longer happen: " + "; ".join(
        f"{rejection} ({baseline[rejection].reason})" for rejection in gone
    )
