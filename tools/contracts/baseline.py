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

from dataclasses import dataclass
from pathlib import Path

from releases import git, parse, release_tags, version_at  # tools/, put on the path by gate.py

__all__ = ["Baseline", "current_version", "find_baseline", "parse"]


@dataclass(frozen=True)
class Baseline:
    version: str
    where: str  # the tag or commit it was read at
    snapshots: dict[str, str]  # snapshot file (relative to the service folder) → its text


def current_version(root: Path, service: str) -> str:
    version = version_at(root, service)
    if version is None:
        raise SystemExit(f"{service}/pyproject.toml: no version")
    return version


def _snapshots_at(root: Path, ref: str, service: str, files: list[str]) -> dict[str, str]:
    found = {}
    for name in files:
        text = git(root, "show", f"{ref}:{service}/{name}")
        if text is not None:
            found[name] = text
    return found


def find_baseline(root: Path, service: str, files: list[str]) -> Baseline | None:
    """The previous release's snapshots of ``files``, or None for a first release."""
    tags = release_tags(root, service)
    if tags:
        version, tag = tags[-1]
        return Baseline(version, tag, _snapshots_at(root, tag, service, files))
    current = current_version(root, service)
    paths = [f"{service}/pyproject.toml", *(f"{service}/{name}" for name in files)]
    commits = (git(root, "log", "--format=%H", "--", *paths) or "").split()  # newest first
    holding = [(c, version_at(root, service, c)) for c in commits]
    holding = [(c, v) for c, v in holding if v and _snapshots_at(root, c, service, files)]
    if not holding:
        return None
    previous = next((v for _, v in holding if v != current), current)
    # The first commit at that version: its contract as released (a later change at the same
    # version, had it passed, would have needed a bump).
    commit = [c for c, v in holding if v == previous][-1]
    return Baseline(previous, commit[:12], _snapshots_at(root, commit, service, files))
