"""Point citations of the first API contract ("CONTRACT §n") at docs/api.md's sections.

Run from anywhere inside the repository: ``python tools/cite_api_reference.py``. It rewrites
every tracked text file in place, prints what it changed, and is safe to run again (a file
without such citations is left alone); ``--check`` only reports and exits 1 if anything is
left to rewrite. Afterwards it lists any "CONTRACT" still in the tree and any Python line the
rewrite made longer than the linter allows, for a person to look at.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

REFERENCE = "docs/api.md"
LINE_LENGTH = 100

# The first contract's sections and the headings of docs/api.md that now hold them.
SECTIONS = {
    1: "topology",
    2: "representation",
    3: "errors",
    4: "authentication",
    5: "users",
    6: "orders",
    7: "books-graphql",
    8: "limits",
    9: "operations",
}

# Files that cite a section for one part of it, which docs/api.md gives its own heading.
NARROWER = {
    "gateway/src/gateway/routing.py": {1: "routes", 4: "routes"},
    "gateway/src/gateway/docs.py": {3: "representation"},  # X-Request-ID
    "shared/src/api_shared/paging.py": {5: "paging-and-sorting"},
    "shared/src/api_shared/openapi.py": {5: "paging-and-sorting"},
    "orders-service/tests/integration/test_listing.py": {5: "paging-and-sorting"},
    "users-service/tests/integration/test_user_listing.py": {5: "paging-and-sorting"},
    "orders-service/src/orders_service/states.py": {6: "states"},
    "orders-service/tests/unit/test_states.py": {6: "states"},
}

# Phrases a mechanical rewrite would garble, rewritten whole first.
PHRASES = {
    "the one table of CONTRACT §6's rules": "the one table of the rules of docs/api.md#states",
    "(CONTRACT §5 rules, §6 fields)": "(docs/api.md#paging-and-sorting, #orders)",
    "tracks CONTRACT.md": "tracks docs/api.md",
    "(CONTRACT §5 and the auth table of §4)": "(docs/api.md#users and #routes)",
}

# "CONTRACT §4", "CONTRACT §1 and §4", "CONTRACT §4, §5".
CITATION = re.compile(r"CONTRACT §(\d+)((?:(?:,| and) §\d+)*)")
MORE_SECTIONS = re.compile(r"§(\d+)")
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".yaml", ".yml", ".html", ".js", ".cfg"}
THIS_FILE = "tools/cite_api_reference.py"


def anchors_for(path: str, sections: list[int]) -> list[str]:
    narrower = NARROWER.get(path, {})
    anchors: list[str] = []
    for section in sections:
        anchor = narrower.get(section) or SECTIONS[section]
        if anchor not in anchors:
            anchors.append(anchor)
    return anchors


def render(path: str, anchors: list[str]) -> str:
    """The citation as text: a relative link in Markdown, the path and anchor elsewhere."""
    if path.endswith(".md"):
        target = os.path.relpath(REFERENCE, os.path.dirname(path) or ".")
        links = [f"[{REFERENCE}#{anchors[0]}]({target}#{anchors[0]})"]
        links += [f"[#{anchor}]({target}#{anchor})" for anchor in anchors[1:]]
    else:
        links = [f"{REFERENCE}#{anchors[0]}"] + [f"#{anchor}" for anchor in anchors[1:]]
    if len(links) == 1:
        return links[0]
    return ", ".join(links[:-1]) + " and " + links[-1]


def rewrite(path: str, text: str) -> str:
    for old, new in PHRASES.items():
        text = text.replace(old, new)

    def cite(match: re.Match[str]) -> str:
        sections = [int(match[1])] + [int(n) for n in MORE_SECTIONS.findall(match[2])]
        return render(path, anchors_for(path, sections))

    new = CITATION.sub(cite, text)
    return wrap_long_lines(new, text) if path.endswith(".py") and new != text else new


def wrap_long_lines(text: str, before: str) -> str:
    """Wrap the comment and docstring lines the rewrite made longer than LINE_LENGTH."""
    prose: set[int] = set()  # 1-based numbers of comment lines and lines of long strings
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and token.line.lstrip().startswith("#"):
            prose.add(token.start[0])
        elif token.type == tokenize.STRING and token.string.lstrip("rbuRBU")[:3] in ('"""', "'''"):
            prose.update(range(token.start[0], token.end[0] + 1))
    old_lines = set(before.splitlines())
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        body = line.rstrip("\n")
        if len(body) <= LINE_LENGTH or index + 1 not in prose or body in old_lines:
            continue
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)]
        prefix = indent + ("# " if stripped.startswith("#") else "")
        words = stripped[1:].lstrip() if stripped.startswith("#") else stripped
        # A bullet's continuation lines are indented under its text.
        bullet = "  " if words.lstrip('"').startswith(("- ", "* ")) else ""
        wrapped = textwrap.fill(
            words,
            width=LINE_LENGTH,
            initial_indent=prefix,
            subsequent_indent=prefix + bullet,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines[index] = wrapped + "\n"
    return "".join(lines)


def tracked_files(root: Path) -> list[str]:
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, text=True
    )
    return [name for name in listing.stdout.split("\0") if Path(name).suffix in TEXT_SUFFIXES]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report only; exit 1 if stale")
    arguments = parser.parse_args()
    root = Path(
        subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], capture_output=True, check=True, text=True
        ).stdout.strip()
    )
    stale, remaining, too_long = [], [], []
    for name in tracked_files(root):
        if name == THIS_FILE:
            continue
        path = root / name
        old = path.read_text(encoding="utf-8")
        new = rewrite(name, old)
        if new != old:
            stale.append(name)
            if not arguments.check:
                path.write_text(new, encoding="utf-8")
                print(f"rewrote {name}")
        for number, line in enumerate(new.splitlines(), 1):
            if "CONTRACT" in line:
                remaining.append(f"{name}:{number}: {line.strip()}")
            if name.endswith(".py") and len(line) > LINE_LENGTH and line not in old:
                too_long.append(f"{name}:{number}")
    for line in remaining:
        print(f"still mentions CONTRACT (check it is deliberate): {line}")
    for line in too_long:
        print(f"longer than {LINE_LENGTH} characters after the rewrite, wrap it: {line}")
    if arguments.check and stale:
        print("citations to rewrite: " + ", ".join(stale))
        return 1
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
