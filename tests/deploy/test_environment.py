"""The variables compose and Kubernetes give each service are exactly what its settings read.

The rule, per service (its ``settings.Settings`` plus any other BaseSettings it builds):
- every variable a deployment sets is one the settings read: a typo cannot ship;
- every settings field without a default is set;
- a variable the settings read but the deployment leaves out is fine: it has a default;
- and the settings accept the values as given, in production (APP_ENV=production).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check_names(where: str, service, names: set[str]) -> None:
    unknown = names - set(service.reads)
    assert not unknown, (
        f"{where} sets {sorted(unknown)}, which {service.member}'s settings never read "
        f"(it reads {sorted(service.reads)})"
    )
    required = {name for name, is_required in service.reads.items() if is_required}
    assert required <= names, f"{where} leaves out required {sorted(required - names)}"


def _load_settings(service, environment: dict[str, str], monkeypatch) -> None:
    """Build every settings class of the service from ``environment`` alone."""
    for name in service.reads:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    for settings in service.settings_classes:
        try:
            settings()
        except ValueError as error:  # pydantic's ValidationError is one
            pytest.fail(f"{service.member}'s {settings.__name__} refuses the deployment: {error}")


def test_the_settings_checked_are_the_ones_each_service_reads(service) -> None:
    # Guards the check itself: found classes, through their validation aliases.
    assert {"APP_ENV", "HOST", service.port_variable} <= set(service.reads)
    if service.has_database:
        assert service.database_variable in service.reads


def test_compose_sets_only_and_all_required_variables_each_service_reads(
    compose, filled_env
) -> None:
    for name, service in compose.app_services().items():
        names = set(compose.environment(name, filled_env))
        _check_names(f"docker-compose.yml service {name}", service, names)


def test_the_services_settings_accept_the_compose_environment(
    compose, filled_env, monkeypatch
) -> None:
    for name, service in compose.app_services().items():
        environment = compose.environment(name, filled_env)
        assert environment["APP_ENV"] == "production", name
        _load_settings(service, environment, monkeypatch)


def test_kubernetes_sets_only_and_all_required_variables_each_service_reads(k8s) -> None:
    workloads = list(k8s.workloads())
    assert {w.service.member for w in workloads} == {
        "gateway",
        "users-service",
        "orders-service",
        "books-graphql",
        "webhooks-service",
    }
    for workload in workloads:
        for container in workload.pod["containers"]:
            names = set(k8s.environment(container))
            where = f"{k8s.name} {workload.kind}/{workload.name}"
            _check_names(where, workload.service, names)


def test_the_services_settings_accept_the_kubernetes_environment(
    k8s, compose, filled_env, monkeypatch
) -> None:
    # A Secret's value is not in the repository: stand in the one compose gives the service.
    compose_values = {
        service.member: compose.environment(name, filled_env)
        for name, service in compose.app_services().items()
    }
    for workload in k8s.workloads():
        (container,) = workload.pod["containers"]
        environment = {}
        for variable, (source, value) in k8s.environment(container).items():
            if value is None:
                assert variable in compose_values[workload.service.member], (
                    f"{workload.name}: no stand-in for the secret {source}"
                )
                value = compose_values[workload.service.member][variable]
            environment[variable] = value
        assert environment["APP_ENV"] == "production"
        _load_settings(workload.service, environment, monkeypatch)


def test_secrets_reach_kubernetes_through_secrets_not_config_maps(k8s) -> None:
    # A secret's value; a variable naming the file of a mounted secret (``_FILE``) is not one.
    secret_like = re.compile(r"(PASSWORD|DATABASE_URL|REDIS_URL|SECRET|PRIVATE_KEY)$")
    for workload in k8s.workloads():
        for container in workload.pod["containers"]:
            for variable, (source, _) in k8s.environment(container).items():
                # A *_FILE variable is the path of a mounted Secret (checked with its mount).
                if secret_like.search(variable) and not variable.endswith("_FILE"):
                    assert source.startswith("secret/"), f"{workload.name}: {variable} {source}"


def test_token_verifiers_agree_with_the_issuer_everywhere(
    compose, filled_env, k8s_base, k8s_dev
) -> None:
    seen: dict[str, set[str]] = defaultdict(set)
    for name, service in compose.app_services().items():
        environment = compose.environment(name, filled_env)
        for variable in ("JWT_ISSUER", "JWT_AUDIENCE"):
            if variable in service.reads:
                assert variable in environment, f"compose {name} leaves {variable} to chance"
                seen[variable].add(environment[variable])
    for manifests in (k8s_base, k8s_dev):
        for workload in manifests.workloads():
            (container,) = workload.pod["containers"]
            environment = manifests.environment(container)
            for variable in ("JWT_ISSUER", "JWT_AUDIENCE"):
                if variable in workload.service.reads:
                    assert variable in environment, f"{workload.name} leaves {variable} to chance"
                    seen[variable].add(str(environment[variable][1]))
    assert all(len(values) == 1 for values in seen.values()), dict(seen)


def test_services_read_the_environment_only_through_their_settings(services) -> None:
    # Otherwise a variable could be read that the checks above cannot see.
    sources = [ROOT / "shared" / "src" / "api_shared"] + [s.source for s in services]
    offenders = []
    for folder in sources:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"read these through a settings class: {offenders}"
