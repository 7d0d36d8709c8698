"""The published contract's lint (docs/contracts.md#the-published-document): ``make contracts``.

    python tools/contracts/lint.py          # the merged /openapi.json the code publishes now
    python tools/contracts/lint.py FILE     # a document fetched from a running gateway

Two linters, pinned in this folder's package-lock.json: Spectral with ``spectral:oas`` and
the OWASP API Security ruleset (``spectral.yaml``, which says which rules are warnings and
why), and Redocly with its ``recommended`` rules (``redocly.yaml``). Any error fails; the
warnings are counted by rule.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from classify import install_tools

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules/.bin"
SPECTRAL_SEVERITIES = ("error", "warning", "information", "hint")
# No telemetry or update check from a lint (and no network beyond the npm registry in CI).
QUIET = {"REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"}


def merged_document() -> str:
    """The gateway's merged document as the code builds it (its snapshot's text)."""
    from snapshots import generate_all

    return generate_all()["gateway"]["contracts/openapi.json"]


def _run(command: list[str]) -> Any:
    run = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**os.environ, **QUIET}
    )
    try:
        return json.loads(run.stdout)
    except ValueError:
        raise RuntimeError(f"{command[0]} failed:\n{run.stderr[-3000:]}") from None


def spectral(path: Path) -> list[tuple[str, str, str]]:
    """Each finding: its severity, rule and where."""
    found = _run([str(BIN / "spectral"), "lint", "-q", "-r", str(HERE / "spectral.yaml"),
                  "-f", "json", str(path)])  # fmt: skip
    return [
        (SPECTRAL_SEVERITIES[item["severity"]], item["code"], "/".join(map(str, item["path"])))
        for item in found
    ]


def redocly(path: Path) -> list[tuple[str, str, str]]:
    found = _run([str(BIN / "redocly"), "lint", "--config", str(HERE / "redocly.yaml"),
                  "--format", "json", str(path)])  # fmt: skip
    return [
        (
            "error" if item["severity"] == "error" else "warning",
            item["ruleId"],
            item["location"][0]["pointer"] if item["location"] else "",
        )
        for item in found["problems"]
    ]


def report(tool: str, findings: list[tuple[str, str, str]]) -> int:
    """Print ``findings``: every error, the warnings counted by rule; the number of errors."""
    errors = [item for item in findings if item[0] == "error"]
    for _, rule, where in errors:
        print(f"{tool}: error: {rule}: {where}")
    warnings = Counter(rule for severity, rule, _ in findings if severity != "error")
    for rule, count in sorted(warnings.items()):
        print(f"{tool}: warning: {rule} x{count}")
    print(f"{tool}: {len(errors)} error(s), {sum(warnings.values())} warning(s)")
    return len(errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("document", nargs="?", type=Path, help="default: the code's own")
    args = parser.parse_args()
    install_tools()
    with tempfile.TemporaryDirectory() as folder:
        path = args.document
        if path is None:
            path = Path(folder) / "openapi.json"
            path.write_text(merged_document(), encoding="utf-8")
        errors = report("spectral", spectral(path)) + report("redocly", redocly(path))
    print(f"contract lint: {'FAIL' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
