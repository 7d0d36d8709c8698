"""One layering for every resource service (docs/architecture.md): routes → services → ports
← repository, with ``context.py`` the one place that names the adapters.

Checked on the imports of each module: the rules and the HTTP layer never reach storage or
other services' clients but through ``ports``, and the ports name no adapter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "orders_service": ROOT / "orders-service" / "src" / "orders_service",
    "users_service": ROOT / "users-service" / "src" / "users_service",
    "webhooks_service": ROOT / "webhooks-service" / "src" / "webhooks_service",
}
# books-graphql answers GraphQL (its resolvers stand for routes and presenter) but has the same
# floors below them: services → ports ← repository.
LAYERED = {**SERVICES, "books_graphql": ROOT / "books-graphql" / "src" / "books_graphql"}
# The adapters: Tortoise queries and HTTP clients of other services.
ADAPTERS = ("repository", "session_repository", "clients")
# What takes its storage as ports, by service: the rules, the HTTP layer, and the parts of
# webhooks' dispatcher that are handed their stores.
PORT_USERS = {
    "books_graphql": ("services", "ports", "resolvers"),
    "orders_service": ("routes", "presenter", "services", "idempotency", "ports"),
    "users_service": ("routes", "presenter", "services", "sessions", "ports"),
    "webhooks_service": (
        "routes",
        "presenter",
        "services",
        "ports",
        "intake",
        "delivery",
        "maintenance",
        "user_changes",
    ),
}


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return modules


@pytest.mark.parametrize("package", SERVICES)
def test_every_resource_service_has_the_same_files(package: str) -> None:
    files = {path.stem for path in SERVICES[package].glob("*.py")}
    assert {"routes", "presenter", "services", "ports", "repository", "context"} <= files


@pytest.mark.parametrize(
    ("package", "module"), [(p, m) for p, modules in PORT_USERS.items() for m in modules]
)
def test_rules_and_routes_reach_storage_only_through_ports(package: str, module: str) -> None:
    imported = imported_modules(LAYERED[package] / f"{module}.py")
    adapters = {f"{package}.{adapter}" for adapter in ADAPTERS}
    reached = sorted(
        name for name in imported if name in adapters or name.split(".")[0] == "tortoise"
    )
    assert not reached, f"{package}.{module} imports {reached}"


@pytest.mark.parametrize("package", LAYERED)
def test_the_ports_name_no_layer_above_them(package: str) -> None:
    above = {f"{package}.{name}" for name in ("services", "routes", "presenter", "context")}
    assert not imported_modules(LAYERED[package] / "ports.py") & above
