"""`make test` checks the programs its suites start before running anything, and stops at once
naming each missing one with its install line (tools/test_prerequisites.sh)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "test_prerequisites.sh"
PROGRAMS = ("node", "npm", "chromium", "redis-server", "promtool", "git")


def _path_with(tmp_path: Path, programs: tuple[str, ...]) -> str:
    """A PATH of stand-ins for ``programs`` (the check only asks whether each exists), and bash."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in programs:
        stand_in = folder / name
        stand_in.write_text("#!/bin/sh\nexit 0\n")
        stand_in.chmod(0o755)
    bash = shutil.which("bash")
    assert bash is not None
    (folder / "bash").symlink_to(bash)
    return str(folder)


def _check(path: str) -> subprocess.CompletedProcess[str]:
    bash = str(Path(path) / "bash")
    return subprocess.run(
        [bash, str(SCRIPT)], env={"PATH": path}, capture_output=True, text=True, timeout=30
    )


def test_a_machine_with_every_program_passes(tmp_path: Path) -> None:
    result = _check(_path_with(tmp_path, PROGRAMS))
    assert (result.returncode, result.stderr) == (0, "")


def test_a_machine_without_chromium_is_told_what_to_install(tmp_path: Path) -> None:
    result = _check(_path_with(tmp_path, tuple(p for p in PROGRAMS if p != "chromium")))
    assert result.returncode == 1
    assert "Chromium" in result.stderr
    assert "apt-get install chromium" in result.stderr
    assert "promtool" not in result.stderr  # only what is missing


def test_every_missing_program_is_named_at_once(tmp_path: Path) -> None:
    result = _check(_path_with(tmp_path, ("git",)))
    assert result.returncode == 1
    named = [line for line in result.stderr.splitlines() if line.startswith("  - ")]
    assert len(named) == 5, result.stderr


def test_make_test_checks_them_before_linting_or_running_a_suite() -> None:
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^test: (.+?) ##", makefile, re.MULTILINE)
    assert match is not None
    prerequisites = match.group(1).split()
    assert prerequisites.index("test-prerequisites") < prerequisites.index("lint")
    assert "tools/test_prerequisites.sh" in makefile
