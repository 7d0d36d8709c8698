"""One layering for every resource service (docs/architecture.md): routes → services → ports
← repository, with ``context.py`` the one place that names the adapters.

Checked on the imports of each module: the rules and the HTTP layer never reach storage or
other services' clients but through ``ports``, and the ports name no adapter. A service that
is packaged by resource (users-service, webhooks-service) holds these files in each
resource's sub-package.
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
    "orders_service": ("routes", "presenter", "services", "queries", "idempotency", "ports"),
    "users_service": ("routes", "presenter", "services", "login", "callers", "mail", "ports"),
    "webhooks_service": (
        "routes",
        "presenter",
        "services",
        "ports",
        "intake",
        "deliverer",
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


def resource_packages(package: str) -> list[Path]:
    """Where a service's layers are: each sub-package with ports (a service packaged by
    resource), else the service's own folder."""
    root = LAYERED[package]
    return sorted(path.parent for path in root.glob("*/ports.py")) or [root]


def is_layer(package: str, name: str, layers: tuple[str, ...] | set[str]) -> bool:
    """Whether the imported ``name`` is one of ``layers`` of ``package``, at any depth."""
    return name.startswith(f"{package}.") and name.rsplit(".", 1)[-1] in layers


@pytest.mark.parametrize("package", SERVICES)
def test_every_resource_service_has_the_same_files(package: str) -> None:
    files = {path.stem for path in SERVICES[package].glob("*.py")}
    if resource_packages(package) == [SERVICES[package]]:
        assert {"routes", "presenter", "services", "ports", "repository", "context"} <= files
        return
    assert "context" in files
    for resource in resource_packages(package):
        files = {path.stem for path in resource.glob("*.py")}
        # Its own storage and wiring; rules beside its routes (a presenter where it has bodies).
        assert {"ports", "repository", "wiring"} <= files, resource.name
        assert "routes" not in files or "services" in files, resource.name


@pytest.mark.parametrize(
    ("package", "module"), [(p, m) for p, modules in PORT_USERS.items() for m in modules]
)
def test_rules_and_routes_reach_storage_only_through_ports(package: str, module: str) -> None:
    paths = [path / f"{module}.py" for path in resource_packages(package)]
    assert any(path.exists() for path in paths), f"{package} has no {module}.py"
    for path in (path for path in paths if path.exists()):
        reached = sorted(
            name
            for name in imported_modules(path)
            if is_layer(package, name, ADAPTERS) or name.split(".")[0] == "tortoise"
        )
        assert not reached, f"{path.relative_to(ROOT)} imports {reached}"


@pytest.mark.parametrize("package", LAYERED)
def test_the_ports_name_no_layer_above_them(package: str) -> None:
    above = ("services", "routes", "presenter", "context", "wiring")
    for resource in resource_packages(package):
        imported = imported_modules(resource / "ports.py")
        assert not [name for name in imported if is_layer(package, name, above)], resource
