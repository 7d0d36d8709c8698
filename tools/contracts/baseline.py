"""The previous release of a service, whose snapshots the current ones are compared with.

1. The latest git tag ``<service>-v<version>`` (docs/releasing.md): a release is a tag.
2. No tag (a clean clone of main may have none): git history, among the commits that hold
   the snapshots. The previous version is the newest version other than the current one
   (else, none yet, the current one); its baseline is the first commit at that version: the
   contract as that version published it. So a change made at an unchanged version, after
   the snapshots were first committed, is still compared with them and needs a bump.
3. Neither: no baseline (a first release), nothing to compare.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True)
class Baseline:
    version: str
    where: str  # the tag or commit it was read at
    snapshots: dict[str, str]  # snapshot file (relative to the service folder) → its text


def parse(version: str) -> tuple[int, int, int]:
    match = VERSION.match(version)
    if match is None:
        raise ValueError(f"not a semantic version MAJOR.MINOR.PATCH: {version!r}")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def current_version(root: Path, service: str) -> str:
    text = (root / service / "pyproject.toml").read_text(encoding="utf-8")
    version: str = tomllib.loads(text)["project"]["version"]
    return version


def _git(root: Path, *args: str) -> str | None:
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return run.stdout if run.returncode == 0 else None


def _version_at(root: Path, ref: str, service: str) -> str | None:
    text = _git(root, "show", f"{ref}:{service}/pyproject.toml")
    if text is None:
        return None
    version: str = tomllib.loads(text)["project"]["version"]
    return version


def _snapshots_at(root: Path, ref: str, service: str, files: list[str]) -> dict[str, str]:
    found = {}
    for name in files:
        text = _git(root, "show", f"{ref}:{service}/{name}")
        if text is not None:
            found[name] = text
    return found


def _latest_tag(root: Path, service: str) -> str | None:
    tags = (_git(root, "tag", "--list", f"{service}-v*") or "").split()
    released = [tag for tag in tags if VERSION.match(tag.removeprefix(f"{service}-v"))]
    return max(released, key=lambda tag: parse(tag.removeprefix(f"{service}-v")), default=None)


def find_baseline(root: Path, service: str, files: list[str]) -> Baseline | None:
    """The previous release's snapshots of ``files``, or None for a first release."""
    tag = _latest_tag(root, service)
    if tag is not None:
        version = tag.removeprefix(f"{service}-v")
        return Baseline(version, tag, _snapshots_at(root, tag, service, files))
    current = current_version(root, service)
    paths = [f"{service}/pyproject.toml", *(f"{service}/{name}" for name in files)]
    commits = (_git(root, "log", "--format=%H", "--", *paths) or "").split()  # newest first
    holding = [(c, _version_at(root, c, service)) for c in commits]
    holding = [(c, v) for c, v in holding if v and _snapshots_at(root, c, service, files)]
    if not holding:
        return None
    previous = next((v for _, v in holding if v != current), current)
    # The first commit at that version: its contract as released (a later change at the same
    # version, had it passed, would have needed a bump).
    commit = [c for c, v in holding if v == previous][-1]
    return Baseline(previous, commit[:12], _snapshots_at(root, commit, service, files))
