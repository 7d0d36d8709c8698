"""The gateway's HTTP/1.1 client is a fenced package: the rest of the gateway uses its proxies
(whole answers, streams) and its replicas, never the connections, the pool or the messages
they are made of."""

from __future__ import annotations

import ast
from pathlib import Path

import gateway

SOURCES = Path(gateway.__file__).parent
FENCED = SOURCES / "upstream"
# What the rest of the gateway may import of the package: its doors.
DOORS = {"gateway.upstream.proxy", "gateway.upstream.stream", "gateway.upstream.replicas"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }


def test_the_rest_of_the_gateway_imports_the_upstream_package_by_its_doors_only() -> None:
    outside = [path for path in SOURCES.rglob("*.py") if FENCED not in path.parents]
    reaching_in = {
        f"{path.relative_to(SOURCES)} imports {module}"
        for path in outside
        for module in imported_modules(path)
        if module.startswith("gateway.upstream") and module not in DOORS
    }

    assert outside
    assert reaching_in == set()


def test_the_upstream_package_knows_nothing_of_the_rest_of_the_gateway() -> None:
    inside = list(FENCED.rglob("*.py"))
    reaching_out = {
        f"{path.relative_to(SOURCES)} imports {module}"
        for path in inside
        for module in imported_modules(path)
        if module.startswith("gateway.") and not module.startswith("gateway.upstream")
    }

    assert inside
    assert reaching_out == set()
