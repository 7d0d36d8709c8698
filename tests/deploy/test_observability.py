"""deploy/prometheus and deploy/grafana: a valid scrape config, a dashboard Grafana can import,
whose every query parses and names only metrics the services export."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from sanic import Sanic

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboard.json"
DASHBOARD_SCHEMA = ROOT / "deploy" / "grafana" / "dashboard.schema.json"
SERVICES = ("gateway", "users-service", "orders-service", "books-graphql")

# What Grafana substitutes before a query reaches Prometheus.
_GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$gateway": ".+", "$service": ".+"}
_METRIC = re.compile(r"\b([a-z_][a-z0-9_]*)\{")


@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool, from the Debian package ``prometheus`` (installed here when missing)."""
    path = shutil.which("promtool")
    if path is None:
        subprocess.run(["apt-get", "update", "-qq"], check=False, timeout=300)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"],
            check=False,
            timeout=600,
        )
        path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is required: apt-get install prometheus")
    return path


def _dashboard() -> dict[str, object]:
    return json.loads(DASHBOARD.read_text())


def _queries(dashboard: dict[str, object]) -> list[str]:
    """Every panel's PromQL, with Grafana's variables substituted."""
    queries = []
    for panel in dashboard["panels"]:  # type: ignore[attr-defined]
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
    assert {job["job_name"] for job in config["scrape_configs"]} == set(SERVICES)


def test_the_dashboard_is_valid_against_its_schema(run_tool) -> None:
    result = run_tool("check-jsonschema", "--schemafile", DASHBOARD_SCHEMA, DASHBOARD)

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dashboard_schema_rejects_a_panel_off_the_grid(run_tool, tmp_path: Path) -> None:
    dashboard = _dashboard()
    dashboard["panels"][1]["gridPos"]["w"] = 30  # type: ignore[index]
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


def test_the_dashboard_asks_only_for_metrics_the_platform_exports() -> None:
    from gateway.app import create_app
    from gateway.settings import Settings

    Sanic.test_mode = True
    registry = create_app(Settings()).ctx.metrics_registry
    exported = {
        family.name + suffix
        for family in registry.collect()
        for suffix in ("", "_total", "_bucket", "_count", "_sum")
    }
    asked = {name for query in _queries(_dashboard()) for name in _METRIC.findall(query)}

    assert asked, "no metric found in the dashboard's queries"
    assert asked <= exported, f"not exported: {sorted(asked - exported)}"
    panels = " ".join(str(panel["title"]).lower() for panel in _dashboard()["panels"])  # type: ignore[attr-defined]
    for topic in ("request rate", "error", "p50 / p99", "upstream", "rate-limit"):
        assert topic in panels, topic
