"""tools/previous_release.py, run in a repository of its own whose history is made here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class History:
    """A git repository holding the tool and two services' pyproject.toml."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "tools").mkdir()
        for tool in ("previous_release.py", "releases.py"):
            shutil.copy(ROOT / "tools" / tool, path / "tools")
        self.git("init", "--quiet", "--initial-branch=main")
        self.git("config", "user.email", "release@example.com")
        self.git("config", "user.name", "Release")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.path, check=True, capture_output=True, text=True
        ).stdout.strip()

    def commit(self, message: str, **versions: str) -> str:
        """Commit with each service's version set (``users_service="1.0.0"``); its hash."""
        for service, version in versions.items():
            folder = self.path / service.replace("_", "-")
            folder.mkdir(exist_ok=True)
            (folder / "pyproject.toml").write_text(
                f'[project]\nname = "{folder.name}"\nversion = "{version}"\n'
            )
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "--message", message)
        return self.git("rev-parse", "HEAD")

    def previous_release(self, service: str) -> str:
        return subprocess.run(
            [sys.executable, "tools/previous_release.py", service],
            cwd=self.path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()


@pytest.fixture
def history(tmp_path: Path) -> History:
    return History(tmp_path)


def test_without_tags_it_is_the_commit_just_before_the_version_changed(history: History) -> None:
    history.commit("first", users_service="0.1.0", gateway="0.1.0")
    last_of_0_1 = history.commit("a fix, still 0.1.0")
    history.commit("release 1.0.0", users_service="1.0.0")
    history.commit("after the release")

    assert history.previous_release("users-service") == last_of_0_1


def test_a_version_bumped_in_the_working_tree_makes_head_the_previous_release(
    history: History,
) -> None:
    history.commit("first", users_service="0.1.0")
    head = history.commit("second")
    (history.path / "users-service" / "pyproject.toml").write_text(
        '[project]\nname = "users-service"\nversion = "0.2.0"\n'
    )

    assert history.previous_release("users-service") == head


def test_the_newest_release_tag_other_than_the_current_version_wins(history: History) -> None:
    first = history.commit("first", users_service="0.9.0")
    history.git("tag", "users-service-v0.9.0")
    history.git("tag", "users-service-vnot-a-version")
    history.commit("release 1.0.0", users_service="1.0.0")
    history.git("tag", "users-service-v1.0.0")  # the checkout's own release
    history.commit("after the release")

    assert history.previous_release("users-service") == first


def test_a_version_that_never_changed_falls_back_to_the_commit_before_head(
    history: History,
) -> None:
    history.commit("first", gateway="0.1.0")
    before = history.commit("second")
    history.commit("third")

    assert history.previous_release("gateway") == before


def test_on_a_branch_the_fallback_is_the_merge_base_with_main(history: History) -> None:
    history.commit("first", gateway="0.1.0")
    base = history.commit("second")
    history.git("switch", "--quiet", "--create", "feature")
    history.commit("on the branch")
    history.commit("more on the branch")

    assert history.previous_release("gateway") == base
