"""Run every test suite, each in its own pytest process, and print one total.

Each service's tests initialise Tortoise ORM, whose state is per process: two services'
suites in one interpreter would share it. So each suite gets its own process, in order:
shared, the development servers, the services, then end-to-end.

    python tools/run_tests.py            # every suite
    python tools/run_tests.py -- -x -q   # extra pytest arguments for each suite
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = (
    "shared/tests",
    "devservers/tests",
    "users-service/tests",
    "orders-service/tests",
    "books-graphql/tests",
    "webhooks-service/tests",
    "gateway/tests",
    "tests/deploy",
    "tests/e2e",
)
NO_TESTS_COLLECTED = 5


def _counts(report: Path) -> dict[str, int]:
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    if not report.exists():
        return totals
    for suite in ET.parse(report).getroot().iter("testsuite"):  # noqa: S314 - pytest wrote it
        tests = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        totals["failed"] += failed
        totals["skipped"] += skipped
        totals["passed"] += tests - failed - skipped
    return totals


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    database = "PostgreSQL" if os.environ.get("TEST_DATABASE_URL") else "SQLite"
    print(f"Tests run against {database} (set TEST_DATABASE_URL for PostgreSQL).", flush=True)
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    failed_suites: list[str] = []
    with tempfile.TemporaryDirectory() as reports:
        for suite in SUITES:
            if not any((REPO / suite).rglob("test_*.py")):
                continue
            report = Path(reports) / f"{suite.replace('/', '_')}.xml"
            print(f"\n=== {suite} ===", flush=True)
            code = subprocess.call(
                [sys.executable, "-m", "pytest", suite, f"--junitxml={report}", *extra],
                cwd=REPO,
            )
            if code not in (0, NO_TESTS_COLLECTED):
                failed_suites.append(suite)
            for key, value in _counts(report).items():
                totals[key] += value
    print()
    if failed_suites:
        print(f"Failing suites: {', '.join(failed_suites)}")
    print(
        f"total: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped"
    )
    return 1 if failed_suites or totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
