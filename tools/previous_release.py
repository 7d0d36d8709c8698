"""The commit of a service's previous release: what a rolling upgrade replaces.

    python tools/previous_release.py users-service            # prints a commit
    python tools/previous_release.py users-service --version  # and that release's version
    python tools/previous_release.py --all   # each service: commit, its version, the current

The rule, first match wins:

1. the latest tag ``<service>-v<version>`` whose version is not the checkout's own (a release
   is a tag per service; the checkout's own tag is the current release, not the previous);
2. else the commit just before the one that set the current ``version`` in
   ``<service>/pyproject.toml`` (the last commit still at the version before);
3. else (the version never changed) the merge base with ``origin/main`` (or ``main``) when
   that is not the checkout itself, else ``HEAD~1``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from releases import SERVICES, git, parse, release_tags, version_at

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    """A git command's output in this repository, stripped; raises when git fails."""
    found = git(ROOT, *args)
    if found is None:
        raise SystemExit(f"git {' '.join(args)} failed in {ROOT}")
    return found.strip()


def _git_or_none(*args: str) -> str | None:
    found = git(ROOT, *args)
    return found.strip() or None if found is not None else None


def _from_tags(service: str, current: str | None) -> str | None:
    """Rule 1: the newest release tag of the service other than the current version."""
    tagged = [
        tag
        for version, tag in release_tags(ROOT, service)
        if current is None or parse(version) != parse(current)
    ]
    return _git("rev-list", "-n", "1", tagged[-1]) if tagged else None


def _from_version_history(service: str, current: str | None) -> str | None:
    """Rule 2: the parent of the oldest commit of the current version's unbroken run."""
    head = _git("rev-parse", "HEAD")
    if version_at(ROOT, service, head) != current:  # bumped in the working tree: HEAD is before
        return head
    first_of_run: str | None = None
    for commit in _git("log", "--format=%H", "--", f"{service}/pyproject.toml").splitlines():
        if version_at(ROOT, service, commit) != current:
            break
        first_of_run = commit
    else:
        return None  # the version never differed: no earlier release in the history
    return _git_or_none("rev-parse", f"{first_of_run}^") if first_of_run else None


def _fallback() -> str:
    """Rule 3: the merge base with main when it is not HEAD itself, else HEAD~1."""
    head = _git("rev-parse", "HEAD")
    for branch in ("origin/main", "main"):
        base = _git_or_none("merge-base", "HEAD", branch)
        if base is not None and base != head:
            return base
    return _git("rev-parse", "HEAD~1")


def previous_release(service: str) -> str:
    """The commit the service's previous release was built from."""
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r}: one of {', '.join(SERVICES)}")
    current = version_at(ROOT, service)
    return _from_tags(service, current) or _from_version_history(service, current) or _fallback()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("service", nargs="?", choices=SERVICES)
    parser.add_argument(
        "--version", action="store_true", help="print the release's version after the commit"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="a line per service: name, commit, that release's version, the checkout's version",
    )
    args = parser.parse_args(argv)
    if args.all:
        for service in SERVICES:
            commit = previous_release(service)
            print(service, commit, version_at(ROOT, service, commit), version_at(ROOT, service))
        return 0
    if args.service is None:
        parser.error("name a service, or --all")
    commit = previous_release(args.service)
    print(f"{commit} {version_at(ROOT, args.service, commit)}" if args.version else commit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
