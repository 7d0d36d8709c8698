"""books_graphql's layers import downwards only: handler → context → http/ → engine → plans/
→ the catalog's rules, so that each can be read, and changed, without those above it."""

from __future__ import annotations

import ast
from pathlib import Path

import books_graphql

PACKAGE = Path(books_graphql.__file__).parent
# What starts, wires and serves the service: nothing below may import it.
ABOVE_THE_PARTS = {"__main__", "app", "cli", "routes", "context"}
# The catalog's rules and storage, beneath GraphQL and HTTP alike.
CORE = {"book_files", "catalog", "catalog_version", "models", "paging", "ports", "repository"}
CORE |= {"services", "settings", "database"}


def imports_of(path: Path) -> set[str]:
    """The books_graphql modules ``path`` imports, without the package's name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        names |= {
            m.removeprefix("books_graphql.") for m in modules if m.startswith("books_graphql.")
        }
    return names


def modules_under(folder: str) -> list[Path]:
    paths = sorted((PACKAGE / folder).glob("*.py"))
    assert paths, folder  # the folder exists and is read
    return paths


def test_http_and_plans_never_import_the_handler_or_the_wiring() -> None:
    for path in [*modules_under("http"), *modules_under("plans")]:
        reaching_up = {name for name in imports_of(path) if name.split(".")[0] in ABOVE_THE_PARTS}
        assert not reaching_up, f"{path.relative_to(PACKAGE)} imports {reaching_up}"


def test_plans_never_import_http() -> None:
    for path in modules_under("plans"):
        http = {name for name in imports_of(path) if name.split(".")[0] == "http"}
        assert not http, f"{path.relative_to(PACKAGE)} imports {http}"


def test_the_catalogs_rules_know_nothing_of_graphql_or_http() -> None:
    above = {"http", "plans", "engine", "executor", "resolvers", *ABOVE_THE_PARTS}
    for name in sorted(CORE):
        imported = {module.split(".")[0] for module in imports_of(PACKAGE / f"{name}.py")}
        assert not imported & above, f"{name} imports {imported & above}"
