"""deploy/prometheus, deploy/grafana and compose's `observability` profile: a valid scrape
config reaching every service's /metrics, a dashboard Grafana can import (and provisions),
whose every query parses and names only metrics the services export, and a Jaeger on the
OTLP port the services are told.

The profile's images cannot be pulled on the build machines: it is checked statically, by
Compose itself (``docker-compose config``, which needs no engine) and by promtool."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from sanic import Sanic

from api_shared.frame import frame_of

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboard.json"
DASHBOARD_SCHEMA = ROOT / "deploy" / "grafana" / "dashboard.schema.json"
PROVISIONING = ROOT / "deploy" / "grafana" / "provisioning"
SERVICES = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
PACKAGES = ("gateway", "users_service", "orders_service", "books_graphql", "webhooks_service")
# Every process serving /metrics: each service, and webhooks-service's dispatcher.
SCRAPED = (*SERVICES, "webhooks-dispatcher")
# Where each process serves /metrics: the gateway on its admin port (GATEWAY_ADMIN_PORT).
METRICS_PORTS = {"gateway": 9000, "users-service": 8001, "orders-service": 8002}
METRICS_PORTS |= {"books-graphql": 4000, "webhooks-service": 8003, "webhooks-dispatcher": 8004}
PROFILE = "observability"
OBSERVABILITY = {"prometheus", "grafana", "jaeger"}
OTLP_HTTP_PORT = 4318  # the OTLP/HTTP port of the specification, Jaeger's and collectors'
JAEGER_ENDPOINT = f"http://jaeger:{OTLP_HTTP_PORT}"

# What Grafana substitutes before a query reaches Prometheus.
_GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$gateway": ".+", "$service": ".+"}
_METRIC = re.compile(r"\b([a-z_][a-z0-9_]*)\{")


@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool, from the Debian package ``prometheus`` (``make test`` names it when missing)."""
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is required: apt-get install prometheus (README: Prerequisites)")
    return path


def _dashboard() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def _queries(dashboard: dict[str, Any]) -> list[str]:
    """Every panel's PromQL, with Grafana's variables substituted."""
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in _GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append(expr)
    return queries


def _check_queries(
    promtool: str, queries: list[str], folder: Path
) -> subprocess.CompletedProcess[str]:
    """promtool parses PromQL in rule files: one recording rule per query."""
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)
                ],
            }
        ]
    }
    path = folder / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    return subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )


def test_the_prometheus_config_is_valid_and_scrapes_every_service(promtool: str) -> None:
    result = subprocess.run(
        [promtool, "check", "config", str(PROMETHEUS_CONFIG)],
        capture_output=True,
        text=True,
        check=False,
    )
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())

    assert result.returncode == 0, result.stdout + result.stderr
    assert {job["job_name"] for job in config["scrape_configs"]} == set(SCRAPED)


def test_prometheus_scrapes_every_replica_on_the_port_serving_its_metrics(
    observability_config,
) -> None:
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    for job in config["scrape_configs"]:
        (discovery,) = job["dns_sd_configs"]
        # Docker's DNS answers a service name with every replica's address.
        assert discovery["names"] == [job["job_name"]]
        assert discovery["type"] == "A"
        assert discovery["port"] == METRICS_PORTS[job["job_name"]], job["job_name"]
        assert job.get("metrics_path", "/metrics") == "/metrics"
        assert job["job_name"] in observability_config["services"]


@pytest.fixture(scope="module")
def env_file(filled_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """.env as deploy/init-secrets.sh writes it, with tracing pointed at the profile's Jaeger."""
    path = tmp_path_factory.mktemp("compose") / ".env"
    variables = dict(filled_env, OTEL_EXPORTER_OTLP_ENDPOINT=JAEGER_ENDPOINT)
    path.write_text("".join(f"{name}={value}\n" for name, value in variables.items()))
    return path


@pytest.fixture(scope="module")
def observability_config(compose_config: Any, env_file: Path) -> dict[str, Any]:
    config: dict[str, Any] = compose_config(env_file, "--profile", PROFILE)
    return config


def test_the_observability_profile_adds_prometheus_grafana_and_jaeger_and_nothing_else(
    compose_config: Any, env_file: Path, observability_config: dict[str, Any], compose
) -> None:
    default = compose_config(env_file)

    assert set(observability_config["services"]) - set(default["services"]) == OBSERVABILITY
    # `docker compose up` without the profile starts what it always started.
    assert set(default["services"]) == set(compose.services) - OBSERVABILITY
    for name in OBSERVABILITY:
        assert compose.services[name]["profiles"] == [PROFILE], name
    # Nothing of the default stack waits for them: it must start without the profile.
    for name, definition in compose.services.items():
        if name not in OBSERVABILITY:
            assert not set(definition.get("depends_on", {})) & OBSERVABILITY, name


def test_prometheus_runs_the_checked_config(observability_config: dict[str, Any]) -> None:
    prometheus = observability_config["services"]["prometheus"]
    mounts = {volume["target"]: volume for volume in prometheus["volumes"]}
    config_flag = next(c for c in prometheus["command"] if c.startswith("--config.file="))
    mounted = mounts[config_flag.removeprefix("--config.file=")]

    assert Path(mounted["source"]) == PROMETHEUS_CONFIG
    assert mounted["read_only"] is True


def test_grafana_provisions_the_dashboard_on_the_prometheus_it_selects(
    observability_config: dict[str, Any],
) -> None:
    grafana = observability_config["services"]["grafana"]
    mounts = {Path(volume["source"]): volume["target"] for volume in grafana["volumes"]}
    assert mounts[PROVISIONING] == "/etc/grafana/provisioning"
    dashboard_in_container = Path(mounts[DASHBOARD])

    (datasource,) = _provisioned("datasources")["datasources"]
    url = urlsplit(datasource["url"])
    prometheus = observability_config["services"]["prometheus"]
    variables = _dashboard()["templating"]["list"]
    (selector,) = [variable for variable in variables if variable["type"] == "datasource"]
    assert datasource["type"] == "prometheus"
    assert datasource["isDefault"] is True
    # The dashboard's data-source variable selects this one by uid, and by type otherwise.
    assert selector["query"] == "prometheus"
    assert selector["current"]["value"] == datasource["uid"]
    assert url.hostname == "prometheus"
    assert url.port in {port["target"] for port in prometheus["ports"]}

    (provider,) = _provisioned("dashboards")["providers"]
    assert provider["type"] == "file"
    assert Path(provider["options"]["path"]) == dashboard_in_container.parent
    assert provider["allowUiUpdates"] is False


def _provisioned(kind: str) -> dict[str, Any]:
    """The one provisioning file of ``kind`` (datasources, dashboards), parsed."""
    (path,) = sorted((PROVISIONING / kind).glob("*.y*ml"))
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    assert document["apiVersion"] == 1, path
    return document


def test_the_services_send_their_traces_to_jaegers_otlp_http_port(
    observability_config: dict[str, Any], compose, env_example: dict[str, str]
) -> None:
    services = observability_config["services"]
    jaeger = services["jaeger"]
    for name in compose.app_services():
        assert services[name]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == JAEGER_ENDPOINT
    assert str(OTLP_HTTP_PORT) in jaeger["expose"]
    # Off unless asked: an empty endpoint is tracing off (api_shared.tracing).
    assert env_example["OTEL_EXPORTER_OTLP_ENDPOINT"] == ""
    assert JAEGER_ENDPOINT in (ROOT / ".env.example").read_text()
    assert JAEGER_ENDPOINT in (ROOT / "docs" / "operations.md").read_text()
    published = {port["target"] for port in jaeger["ports"]}
    assert published == {16686}, "only the UI is published; OTLP stays on the network"


def test_the_dashboard_is_valid_against_its_schema(run_tool) -> None:
    result = run_tool("check-jsonschema", "--schemafile", DASHBOARD_SCHEMA, DASHBOARD)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dashboard_schema_rejects_a_panel_off_the_grid(run_tool, tmp_path: Path) -> None:
    dashboard = _dashboard()
    dashboard["panels"][1]["gridPos"]["w"] = 30
    broken = tmp_path / "dashboard.json"
    broken.write_text(json.dumps(dashboard))

    result = run_tool("check-jsonschema", "--schemafile", DASHBOARD_SCHEMA, broken)

    assert result.returncode != 0


def test_every_dashboard_query_parses(promtool: str, tmp_path: Path) -> None:
    result = _check_queries(promtool, _queries(_dashboard()), tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_query_check_rejects_broken_promql(promtool: str, tmp_path: Path) -> None:
    result = _check_queries(promtool, ["sum by (route (rate(http_requests_total[5m]))"], tmp_path)

    assert result.returncode != 0


def _exported_metrics(package: str) -> set[str]:
    """Every sample name the registry of ``package``'s app (development settings) exports."""
    app_module = importlib.import_module(f"{package}.app")
    settings = importlib.import_module(f"{package}.settings").Settings
    Sanic.test_mode = True
    registry = frame_of(app_module.create_app(settings())).metrics
    return {
        family.name + suffix
        for family in registry.collect()
        for suffix in ("", "_total", "_bucket", "_count", "_sum")
    }


def test_the_dashboard_asks_only_for_metrics_the_platform_exports() -> None:
    exported = set().union(*(_exported_metrics(package) for package in PACKAGES))
    asked = {name for query in _queries(_dashboard()) for name in _METRIC.findall(query)}

    assert asked, "no metric found in the dashboard's queries"
    assert asked <= exported, f"not exported: {sorted(asked - exported)}"
    panels = " ".join(str(panel["title"]).lower() for panel in _dashboard()["panels"])
    topics = ("request rate", "error", "p50 / p99", "upstream", "rate-limit", "argon2", "db pool")
    for topic in topics:
        assert topic in panels, topic


def test_every_service_with_a_database_exports_its_pool_and_users_its_argon2_slots() -> None:
    pool = {"db_pool_connections", "db_pool_connections_in_use", "db_pool_max_connections"}
    argon2 = {"argon2_slots", "argon2_slots_in_use", "argon2_slots_waiting"}
    argon2 |= {"argon2_slot_refusals_total"}
    exported = {package: _exported_metrics(package) for package in PACKAGES}

    for package in ("users_service", "orders_service", "books_graphql"):
        assert pool <= exported[package], package
    assert argon2 <= exported["users_service"]
    assert not (pool | argon2) & exported["gateway"]
