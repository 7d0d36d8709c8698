"""Release one service (docs/releasing.md):

    python tools/release.py <service> <version>     # e.g. users-service 1.1.0

1. sets ``version`` in ``<service>/pyproject.toml`` (and uv.lock, by ``uv lock``);
2. regenerates the service's contract snapshots (``gate.py --update --service``) and runs
   the contract gate on them: the new version must cover the contract's changes since the
   previous release;
3. moves the changelog's Unreleased entries under ``## [<version>] - <date>``;
4. commits those files and tags the commit ``<service>-v<version>``.

Nothing is pushed: push the commit and the tag (``git push --follow-tags``) when ready.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
from pathlib import Path

from releases import SEMVER, SERVICES, tag_of

ROOT = Path(__file__).resolve().parents[1]
UNRELEASED = "## [Unreleased]\n"


def _run(*command: str) -> None:
    subprocess.run(command, cwd=ROOT, check=True)


def set_version(service: str, version: str) -> None:
    path = ROOT / service / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    new, count = re.subn(r'(?m)^version = "[^"]*"$', f'version = "{version}"', text, count=1)
    if count != 1:
        raise SystemExit(f"{path}: no version line")
    path.write_text(new, encoding="utf-8")


def move_unreleased(service: str, version: str) -> None:
    path = ROOT / service / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    if UNRELEASED not in text:
        raise SystemExit(f"{path}: no '{UNRELEASED.strip()}' section")
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    path.write_text(
        text.replace(UNRELEASED, f"{UNRELEASED}\n## [{version}] - {today}\n", 1), encoding="utf-8"
    )


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in SERVICES or not SEMVER.match(sys.argv[2]):
        print(__doc__, file=sys.stderr)
        return 2
    service, version = sys.argv[1:]
    tag = tag_of(service, version)
    set_version(service, version)
    uv = os.environ.get("UV", "uv")
    _run(uv, "lock")
    # The gate reads the version from the installed distribution: `uv run` syncs it first.
    gate = ("python", "tools/contracts/gate.py", "--update", "--service", service)
    _run(uv, "run", "--frozen", *gate)
    move_unreleased(service, version)
    _run("git", "add", "uv.lock", f"{service}/pyproject.toml", f"{service}/CHANGELOG.md")
    _run("git", "add", f"{service}/contracts")
    _run("git", "commit", "-m", f"{service} {version}", "-m", f"Release {tag}.")
    _run("git", "tag", "-a", tag, "-m", f"{service} {version}")
    print(f"released {tag}: push it with `git push --follow-tags`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
