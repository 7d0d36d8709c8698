"""tests/e2e/conftest.py's ``needs`` marker: a test for a newer release than the one running
is deselected (``make e2e-mixed`` sets ``E2E_VERSION_<SERVICE>``), and only then."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Collected, never run: only which of them pytest selects is asserted.
TESTS = """
import pytest

NOT_RUN = "collected only: the test of the needs marker asserts which tests are selected"

def test_any_release() -> None:
    raise AssertionError(NOT_RUN)

@pytest.mark.needs(users_service="1.0.0")
def test_needs_users_1_0() -> None:
    raise AssertionError(NOT_RUN)

@pytest.mark.needs(users_service="0.1.0", orders_service="2.0.0")
def test_needs_users_0_1_and_orders_2_0() -> None:
    raise AssertionError(NOT_RUN)
"""


def collected(folder: Path, **versions: str) -> set[str]:
    """The test names pytest selects in ``folder`` with these releases running."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("E2E_")}
    env |= {f"E2E_VERSION_{service.upper()}": version for service, version in versions.items()}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line}


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "tests" / "e2e" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_releases.py").write_text(TESTS)
    return tmp_path


def test_without_versions_every_test_runs(suite: Path) -> None:
    assert collected(suite) == {
        "test_any_release",
        "test_needs_users_1_0",
        "test_needs_users_0_1_and_orders_2_0",
    }


def test_an_older_release_deselects_the_tests_that_need_a_newer_one(suite: Path) -> None:
    assert collected(suite, users_service="0.9.0", orders_service="2.0.0") == {
        "test_any_release",
        "test_needs_users_0_1_and_orders_2_0",
    }
    assert collected(suite, users_service="1.0.0", orders_service="1.9.9") == {
        "test_any_release",
        "test_needs_users_1_0",
    }
