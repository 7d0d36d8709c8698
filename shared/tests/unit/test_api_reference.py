"""docs/api.md agrees with the code: its error codes, and every citation of its sections.

The error codes the code can emit are the classes of ``api_shared.errors`` and the code
strings the services pass as a ``code`` (GraphQL's ``extensions.code`` in books-graphql):
these are found by reading the services' source, so a new code cannot go undocumented.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from api_shared import errors

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "docs" / "api.md"
SOURCES = sorted(ROOT.glob("*/src/*/**/*.py"))
SKIPPED_DIRECTORIES = {".git", ".venv", "node_modules", "var", ".cache", ".tools"}
CITATION = re.compile(r"docs/api\.md#([a-z0-9-]+)")
TABLE_CODE = re.compile(r"^\| `([A-Z][A-Z_]+)` \|", re.MULTILINE)


def _section(heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    text = REFERENCE.read_text(encoding="utf-8")
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n")
    end = re.compile(rf"\n#{{1,{len(level)}}} ").search(text, start + 1)
    return text[start : end.start() if end else len(text)]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _contract_error_codes() -> set[str]:
    def subclasses(cls: type[errors.ApiError]) -> Iterator[type[errors.ApiError]]:
        for subclass in cls.__subclasses__():
            yield subclass
            yield from subclasses(subclass)

    return {errors.ApiError.code} | {cls.code for cls in subclasses(errors.ApiError)}


def _code_positions(tree: ast.Module) -> dict[str, int]:
    """Callables of a module taking a ``code`` argument, and its position."""
    positions: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = [arg.arg for arg in node.args.args]
        elif isinstance(node, ast.ClassDef):  # a dataclass: its annotated fields, in order
            names = [
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            ]
        else:
            continue
        if "code" in names:
            positions[node.name] = names.index("code")
    return positions


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The string constants ``node`` may evaluate to (``"A" if c else "B"`` gives both)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)


def _codes_in(tree: ast.Module) -> Iterator[str]:
    """Strings given as a ``code``: a dict's "code", a ``code =`` or a ``code`` argument."""
    positions = _code_positions(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code":
                    yield from _strings(value)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and target.id == "code":
                yield from _strings(value)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                for name, item in zip(target.elts, value.elts, strict=False):
                    if isinstance(name, ast.Name) and name.id == "code":
                        yield from _strings(item)
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "code":
                    yield from _strings(keyword.value)
            callee = node.func
            called = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
            position = positions.get(called)
            if position is not None and position < len(node.args):
                yield from _strings(node.args[position])


def _emitted_codes() -> set[str]:
    codes: set[str] = set()
    for path in SOURCES:
        codes.update(_codes_in(ast.parse(path.read_text(encoding="utf-8"))))
    return codes


def _documented_error_codes() -> set[str]:
    return set(TABLE_CODE.findall(_section("## Errors")))


def _documented_graphql_codes() -> set[str]:
    return set(TABLE_CODE.findall(_section("### GraphQL error codes")))


def test_the_source_scan_finds_the_codes_it_is_meant_to_find() -> None:
    # Guards the scan itself: an AST change that made it find nothing would pass vacuously.
    emitted = _emitted_codes()

    assert {"INTERNAL", "VALIDATION_FAILED", "QUERY_TOO_DEEP", "GRAPHQL_PARSE_FAILED"} <= emitted
    assert {"INTERNAL_SERVER_ERROR", "GRAPHQL_VALIDATION_FAILED"} <= emitted


def test_every_error_code_of_api_shared_is_in_the_error_table() -> None:
    missing = _contract_error_codes() - _documented_error_codes()

    assert not missing, f"add these codes to docs/api.md#errors: {sorted(missing)}"


def test_every_code_in_the_error_table_exists_in_api_shared() -> None:
    unknown = _documented_error_codes() - _contract_error_codes()

    assert not unknown, f"docs/api.md#errors lists codes no error class has: {sorted(unknown)}"


def test_every_code_the_services_emit_is_documented() -> None:
    documented = _documented_error_codes() | _documented_graphql_codes()

    undocumented = _emitted_codes() - documented

    assert not undocumented, f"document these codes in docs/api.md: {sorted(undocumented)}"


def test_every_documented_graphql_code_is_emitted_by_books_graphql() -> None:
    emitted = _emitted_codes()

    unknown = _documented_graphql_codes() - emitted

    assert _documented_graphql_codes(), "the GraphQL error code table is empty"
    assert not unknown, f"docs/api.md lists GraphQL codes nothing emits: {sorted(unknown)}"


def test_every_citation_of_the_reference_names_one_of_its_sections() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    anchors = {
        _anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)
    }
    broken = [
        f"{path.relative_to(ROOT)}: #{anchor}"
        for path in _text_files()
        for anchor in CITATION.findall(path.read_text(encoding="utf-8", errors="replace"))
        if anchor not in anchors
    ]

    assert not broken, f"citations of docs/api.md naming no section: {broken}"


def _text_files() -> Iterator[Path]:
    for path in ROOT.rglob("*"):
        if SKIPPED_DIRECTORIES.intersection(path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".yml", ".toml", ".html"}:
            yield path
