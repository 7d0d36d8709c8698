"""The Docker Swarm stack (deploy/swarm/): docker-compose.yml with stack.compose.yml, as
Compose merges them (``docker-compose config``: no engine) and stack.py turns them into a
stack file. Statically: every service of compose is in it with the same settings, in the
shape Swarm needs where this project's hosts lack IPVS, with NATS as a three-server cluster.
make e2e-swarm deploys it on three nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "deploy" / "swarm" / "stack.compose.yml"
STACK_PY = ROOT / "deploy" / "swarm" / "stack.py"
NATS_SERVERS = ("nats-1", "nats-2", "nats-3")
PUBLISHERS = ("users-service", "orders-service")
ON_A_MANAGER = ("gateway", "postgres", "redis")
NATS_CLIENTS = ("users-service", "orders-service", "webhooks-dispatcher")
CLUSTER_FILES = ("nats.conf", "cluster.conf", "cluster-server.sh")


@pytest.fixture(scope="module")
def env_file(filled_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("swarm") / ".env"
    path.write_text("".join(f"{name}={value}\n" for name, value in filled_env.items()))
    return path


@pytest.fixture(scope="module")
def merged(compose_config: Any, env_file: Path) -> dict[str, Any]:
    """docker-compose.yml with the overlay, as Compose reads them."""
    model: dict[str, Any] = compose_config(
        env_file, "--file", "docker-compose.yml", "--file", OVERLAY
    )
    return model


@pytest.fixture(scope="module")
def stack(merged: dict[str, Any]) -> dict[str, Any]:
    """The stack file stack.py writes."""
    result = subprocess.run(
        [sys.executable, str(STACK_PY)],
        input=json.dumps(merged),
        capture_output=True,
        text=True,
        check=True,
    )
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_every_compose_service_is_in_the_stack_and_nats_is_three_servers(compose, stack) -> None:
    default = {name for name, svc in compose.services.items() if "profiles" not in svc}
    assert set(stack["services"]) == default - {"nats"} | set(NATS_SERVERS)


def test_each_service_keeps_compose_settings(compose, stack, merged) -> None:
    # The overlay adds placement and replicas; image, command, secrets, health checks and
    # hardening are docker-compose.yml's.
    for name, service in stack["services"].items():
        source = merged["services"][name]
        for key in ("image", "healthcheck", "secrets", "read_only", "cap_drop", "init"):
            assert service.get(key) == source.get(key), (name, key)
        if name in compose.services and name not in NATS_SERVERS:
            assert service.get("command") == source.get("command"), name


def test_the_stack_has_nothing_swarm_refuses_or_ignores(stack) -> None:
    assert stack["version"] == "3.9"
    for name, service in stack["services"].items():
        kept = set(service) & {"build", "pull_policy", "restart", "depends_on", "security_opt"}
        assert not kept, (name, kept)
        for volume in service.get("volumes", []):
            assert volume["type"] in ("volume", "tmpfs"), (name, volume)  # no host paths
        for config in service.get("configs", []):
            assert Path(stack["configs"][config["source"]]["file"]).is_file()
    assert stack["networks"]["default"]["driver"] == "overlay"


def test_services_resolve_by_dns_and_publish_on_their_own_node(stack) -> None:
    # No IPVS on these hosts: no virtual IP, no ingress routing mesh.
    for name, service in stack["services"].items():
        assert service["deploy"]["endpoint_mode"] == "dnsrr", name
        for port in service.get("ports", []):
            assert port["mode"] == "host", name
            assert isinstance(port["published"], int)


def test_gateway_and_data_on_a_manager_and_services_on_workers(stack) -> None:
    for name, service in stack["services"].items():
        constraints = service["deploy"]["placement"]["constraints"]
        if name in ON_A_MANAGER:
            assert constraints == ["node.role == manager"], name
        elif name not in NATS_SERVERS:
            assert constraints == ["node.role == worker"], name
    for name in PUBLISHERS:
        assert stack["services"][name]["deploy"]["replicas"] == 2


def test_updates_start_the_new_task_before_stopping_the_old_and_roll_back_on_failure(stack) -> None:
    for name in (
        "gateway",
        *PUBLISHERS,
        "books-graphql",
        "webhooks-service",
        "webhooks-dispatcher",
    ):
        update = stack["services"][name]["deploy"]["update_config"]
        assert update["order"] == "start-first", name
        assert update["parallelism"] == 1, name
        assert update["failure_action"] == "rollback", name


def test_migrations_run_once_and_are_retried_only_while_they_fail(compose, stack) -> None:
    one_shots = [name for name in compose.services if compose.is_one_shot(name)]
    assert one_shots
    for name in one_shots:
        deploy = stack["services"][name]["deploy"]
        assert deploy["replicas"] == 1
        assert deploy["restart_policy"]["condition"] == "on-failure", name


def test_nats_servers_form_one_cluster_one_per_labelled_node(stack) -> None:
    servers = {name: stack["services"][name] for name in NATS_SERVERS}
    peers = {server["environment"]["NATS_PEERS"] for server in servers.values()}
    assert peers == {" ".join(f"{name}:6222" for name in NATS_SERVERS)}
    names = [server["environment"]["NATS_SERVER_NAME"] for server in servers.values()]
    assert names == list(NATS_SERVERS)
    nodes = [tuple(s["deploy"]["placement"]["constraints"]) for s in servers.values()]
    assert len(set(nodes)) == 3
    assert all("api-platform.nats" in n[0] for n in nodes)
    volumes = [s["volumes"][0]["source"] for s in servers.values()]
    assert len(set(volumes)) == 3  # each its own store
    for server in servers.values():
        assert server["entrypoint"] == ["sh", "/etc/nats/cluster-server.sh"]
        assert server["command"] == []
        # The routes' password is a secret file, never a value in the configuration.
        assert "NATS_CLUSTER_PASSWORD" not in server["environment"]
        assert {
            "source": "nats_cluster_password",
            "target": "/run/secrets/nats_cluster_password",
        } in server["secrets"]
        targets = {config["target"] for config in server["configs"]}
        assert targets == {
            "/etc/nats/nats.conf",
            "/etc/nats/cluster.conf",
            "/etc/nats/cluster-server.sh",
        }


def test_clients_know_every_server_and_streams_are_kept_on_all_three(stack) -> None:
    for name in NATS_CLIENTS:
        url = stack["services"][name]["environment"]["NATS_URL"]
        assert url.split(",") == [f"nats://{server}:4222" for server in NATS_SERVERS], name
    for name in PUBLISHERS:
        replicas = int(stack["services"][name]["environment"]["EVENTS_STREAM_REPLICAS"])
        assert replicas == len(NATS_SERVERS), name


def test_the_cluster_config_includes_the_users_and_authenticates_routes() -> None:
    config = (ROOT / "deploy" / "nats" / "cluster.conf").read_text()
    assert 'include "nats.conf"' in config
    assert "password: $NATS_CLUSTER_PASSWORD" in config
    assert "routes: $NATS_ROUTES" in config
    script = (ROOT / "deploy" / "nats" / "cluster-server.sh").read_text()
    assert 'cat "$NATS_CLUSTER_PASSWORD_FILE"' in script
    assert "nats-route://route:$NATS_CLUSTER_PASSWORD@$peer" in script
