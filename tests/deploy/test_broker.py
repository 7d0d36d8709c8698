"""NATS in the deployments: the users and permissions of ``api_shared.events.access`` in one
config file (compose mounts it, Kubernetes makes it a ConfigMap), each user known by its
public key, each process holding its own seed and no other, the monitoring port nowhere
reachable but from inside the server's own container. On Kubernetes, a cluster of three
servers keeping every stream on all three: one lost loses no event."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from api_shared.events.access import MONITORING, SERVICES, deployment_config
from api_shared.events.credentials import seed_file

ROOT = Path(__file__).resolve().parents[2]
NATS_DIR = ROOT / "deploy" / "nats"
CONFIG = NATS_DIR / "nats.conf"
MOUNTED_CONFIG = "/etc/nats/nats.conf"
# Kubernetes runs NATS as a cluster (deploy/nats/cluster-server.sh): these files at /etc/nats.
CLUSTER_FILES = ("nats.conf", "cluster.conf", "cluster-server.sh")
MOUNTED_DIR = "/etc/nats"
CLUSTER_SIZE = 3  # JetStream's quorum, 2, survives one server lost
CLUSTER_PORT = 6222
SEEDS_PATH = "${NATS_SEEDS_PATH:-./deploy/secrets/nats}"

# Compose service -> the NATS user its process connects as (its seed's compose secret is
# nats_<user>_seed). The one-shots share their server's configuration, seed included.
COMPOSE_USERS = {
    "users-service": "users-service",
    "users-migrate": "users-service",
    "orders-service": "orders-service",
    "orders-migrate": "orders-service",
    "webhooks-dispatcher": "webhooks-dispatcher",
}
# Kubernetes Deployment -> its NATS user (its seed: the Secret <user>-nats).
K8S_USERS = {
    "users-service": "users-service",
    "orders-service": "orders-service",
    "webhooks-dispatcher": "webhooks-dispatcher",
}


def secret_of(user: str) -> str:
    return f"nats_{user.replace('-', '_')}_seed"


def test_the_committed_config_is_the_rendering_of_the_users_and_their_permissions() -> None:
    # Regenerate with: python -m api_shared.events.access > deploy/nats/nats.conf
    assert CONFIG.read_text() == deployment_config()


def test_the_deployments_know_exactly_the_processes_that_connect() -> None:
    assert {user.name for user in SERVICES} == set(K8S_USERS.values())
    assert set(COMPOSE_USERS.values()) == set(K8S_USERS.values())


def test_compose_runs_nats_on_the_committed_config_with_each_users_public_key(
    compose, filled_env, blank_public_keys
) -> None:
    nats = compose.services["nats"]
    assert f"./deploy/nats/nats.conf:{MOUNTED_CONFIG}:ro" in nats["volumes"]
    assert f"--config={MOUNTED_CONFIG}" in nats["command"]
    assert compose.environment("nats", filled_env) == {
        user.nkey_variable: blank_public_keys[user.nkey_variable] for user in SERVICES
    }


def test_compose_refuses_to_start_nats_without_a_users_public_key(
    compose, filled_env, blank_public_keys
) -> None:
    for name in blank_public_keys:
        with pytest.raises(ValueError, match=name):
            compose.environment("nats", dict(filled_env, **{name: ""}))


def test_each_compose_process_mounts_its_own_seed_only_where_its_settings_read_it(
    compose, filled_env, monkeypatch
) -> None:
    for name, definition in compose.services.items():
        user = COMPOSE_USERS.get(name)
        mounted = {s for s in definition.get("secrets", []) if s.startswith("nats_")}
        environment = compose.environment(name, filled_env)
        if user is None:
            assert mounted == set(), f"{name} connects to no NATS: it holds no seed"
            assert "NATS_NKEY_SEED_FILE" not in environment, name
            continue
        assert mounted == {secret_of(user)}, name
        assert environment["NATS_NKEY_SEED_FILE"] == f"/run/secrets/{secret_of(user)}", name
    for user in set(COMPOSE_USERS.values()):
        assert compose.data["secrets"][secret_of(user)] == {"file": f"{SEEDS_PATH}/{user}.nk"}


def test_each_compose_process_connects_as_its_own_user_in_production(
    compose, filled_env, monkeypatch
) -> None:
    """Production refuses a process without its seed (``EventSettings.nats_login``): the
    compose settings give each its own."""
    connecting = {n: s for n, s in compose.app_services().items() if n in COMPOSE_USERS}
    assert set(connecting) == set(COMPOSE_USERS)
    for name, service in connecting.items():
        for variable in service.reads:
            monkeypatch.delenv(variable, raising=False)
        for variable, value in compose.environment(name, filled_env).items():
            monkeypatch.setenv(variable, value)
        settings = importlib.import_module(f"{service.package}.settings").Settings()

        login = settings.nats_login(COMPOSE_USERS[name])

        assert settings.is_production, name
        assert login.seed_file == Path(f"/run/secrets/{secret_of(COMPOSE_USERS[name])}"), name
        assert login.url == "nats://nats:4222", name


def test_the_default_seeds_folder_is_git_ignored(filled_env) -> None:
    seeds = ROOT / filled_env["NATS_SEEDS_PATH"]
    ignore = ROOT / "deploy" / "secrets" / ".gitignore"
    assert seeds.is_relative_to(ignore.parent), "the seeds are kept with the other secrets"
    assert ignore.read_text().splitlines()[-2:] == ["*", "!.gitignore"]
    assert seed_file(seeds, "users-service").name == "users-service.nk"


def test_the_compose_monitoring_port_is_on_the_containers_loopback_only(compose) -> None:
    nats = compose.services["nats"]
    assert "ports" not in nats
    assert "expose" not in nats
    assert not [arg for arg in nats["command"] if "http" in arg or arg == "-m"]
    assert f"http: {MONITORING!r}".replace("'", '"') in CONFIG.read_text()
    assert MONITORING.startswith("127.0.0.1:")
    test = " ".join(nats["healthcheck"]["test"])
    assert f"http://{MONITORING}/healthz" in test


def _nats_server(k8s) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The nats StatefulSet's spec, its pod's spec and its one container."""
    spec = k8s.of_kind("StatefulSet")["nats"]["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    return spec, pod, container


def test_kubernetes_runs_each_nats_server_on_the_committed_cluster_files(k8s) -> None:
    _, pod, container = _nats_server(k8s)
    assert container["command"] == ["sh", f"{MOUNTED_DIR}/cluster-server.sh"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (volume,) = [v for v in pod["volumes"] if "configMap" in v]
    assert mounts[volume["name"]] == MOUNTED_DIR
    config_map = k8s.of_kind("ConfigMap")[volume["configMap"]["name"]]
    assert config_map["data"] == {name: (NATS_DIR / name).read_text() for name in CLUSTER_FILES}
    # The script starts the cluster's config beside it, which takes the users from nats.conf.
    assert '--config="$here/cluster.conf"' in (NATS_DIR / "cluster-server.sh").read_text()
    assert 'include "nats.conf"' in (NATS_DIR / "cluster.conf").read_text()
    keys = {
        name: source
        for name, (source, _) in k8s.environment(container).items()
        if source.startswith("secret/")
    }
    assert keys == {
        user.nkey_variable: f"secret/nats-user-keys/{user.nkey_variable}" for user in SERVICES
    }


def test_kubernetes_offers_nats_clients_their_port_and_the_servers_their_routes(k8s) -> None:
    _, _, container = _nats_server(k8s)
    assert container["ports"] == [
        {"name": "client", "containerPort": 4222},
        {"name": "cluster", "containerPort": CLUSTER_PORT},
    ]
    assert not [arg for arg in container.get("args", []) if "http" in arg or arg == "-m"]
    service = k8s.of_kind("Service")["nats"]
    assert [port["port"] for port in service["spec"]["ports"]] == [4222]


def test_kubernetes_probes_nats_on_its_loopback_ready_once_current_with_the_cluster(
    k8s,
) -> None:
    _, _, container = _nats_server(k8s)
    commands = {}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert "httpGet" not in container[probe]
        commands[probe] = " ".join(container[probe]["exec"]["command"])
        assert f"http://{MONITORING}/healthz" in commands[probe]
    # Ready: its JetStream current with the cluster's (the disruption budget and rolling
    # updates wait for it). Alive: JetStream on, quorum or not (a server waiting for its peers
    # is not restarted for it).
    assert f"http://{MONITORING}/healthz'" in commands["readinessProbe"]
    assert "js-enabled-only=true" in commands["livenessProbe"]
    assert commands["startupProbe"] == commands["livenessProbe"]


def test_kubernetes_runs_nats_as_three_servers_each_naming_all_of_them(k8s) -> None:
    spec, _, container = _nats_server(k8s)
    assert spec["replicas"] == CLUSTER_SIZE
    # Started together: one server alone never becomes ready (no JetStream leader).
    assert spec["podManagementPolicy"] == "Parallel"
    environment = k8s.environment(container)
    assert environment["NATS_SERVER_NAME"] == ("field/metadata.name", None)
    name, service_name = k8s.of_kind("StatefulSet")["nats"]["metadata"]["name"], spec["serviceName"]
    peers = environment["NATS_PEERS"][1]
    assert peers is not None
    # The StatefulSet's pods by their names under its Service, on the cluster's port.
    assert peers.split() == [
        f"{name}-{ordinal}.{service_name}:{CLUSTER_PORT}" for ordinal in range(spec["replicas"])
    ]
    assert f'listen: "0.0.0.0:{CLUSTER_PORT}"' in (NATS_DIR / "cluster.conf").read_text()
    service = k8s.of_kind("Service")[service_name]["spec"]
    assert service["clusterIP"] == "None", "headless: a name per pod, for NATS_PEERS"
    assert service["publishNotReadyAddresses"] is True, "routes form before readiness"
    assert service["selector"].items() <= spec["template"]["metadata"]["labels"].items()


def test_the_nats_cluster_password_is_a_secret_file_never_a_value(k8s) -> None:
    _, pod, container = _nats_server(k8s)
    environment = k8s.environment(container)
    assert not [n for n in environment if "PASSWORD" in n and n != "NATS_CLUSTER_PASSWORD_FILE"]
    source, password_file = environment["NATS_CLUSTER_PASSWORD_FILE"]
    assert source == "value"
    assert password_file is not None
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    folder = str(Path(password_file).parent)
    (volume,) = [v for v in pod["volumes"] if v["name"] == mounts[folder]]
    secret = volume["secret"]
    assert secret["secretName"] == "nats-cluster"
    assert secret["items"] == [{"key": "password", "path": Path(password_file).name}]
    assert secret["defaultMode"] == 0o440, "readable through the pod's group only"
    assert pod["securityContext"]["fsGroup"] == 10001
    assert 'cat "$NATS_CLUSTER_PASSWORD_FILE"' in (NATS_DIR / "cluster-server.sh").read_text()


def test_each_nats_server_keeps_its_store_on_its_own_volume(k8s) -> None:
    spec, _, container = _nats_server(k8s)
    script = (NATS_DIR / "cluster-server.sh").read_text()
    # The script's --store_dir, unless the container's arguments give another (the last wins).
    store_dirs = re.findall(r"--store_dir=(\S+)", script) + [
        arg.split("=", 1)[1] for arg in container.get("args", []) if arg.startswith("--store_dir=")
    ]
    (claim,) = spec["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == store_dirs[-1]


def test_the_publishers_keep_their_streams_on_every_nats_server_and_no_more(k8s) -> None:
    spec, _, _ = _nats_server(k8s)
    publishers = set()
    for workload in k8s.workloads():
        for container in workload.pod["containers"]:
            replicas = k8s.environment(container).get("EVENTS_STREAM_REPLICAS")
            if replicas is None:
                continue
            # JetStream refuses a stream on more servers than the cluster has.
            assert replicas[1] is not None
            assert int(replicas[1]) <= spec["replicas"], workload.name
            if workload.kind == "Deployment":
                assert int(replicas[1]) == spec["replicas"], workload.name
                publishers.add(workload.name)
    assert publishers == {"users-service", "orders-service"}


def test_the_nats_clients_reach_the_cluster_through_its_headless_service(k8s) -> None:
    """One URL, the Service's name: it resolves to every server (nats-py takes one URL per
    string; a comma-separated list is not split)."""
    spec, _, _ = _nats_server(k8s)
    urls = {
        name: config_map["data"]["NATS_URL"]
        for name, config_map in k8s.of_kind("ConfigMap").items()
        if "NATS_URL" in config_map.get("data", {})
    }
    assert set(urls) == {
        f"{user}-config" for user in ("users-service", "orders-service", "webhooks-service")
    }
    for name, url in urls.items():
        assert url == f"nats://{spec['serviceName']}:4222", name


def test_the_base_puts_no_two_nats_servers_on_one_node(k8s_base) -> None:
    spec, pod, _ = _nats_server(k8s_base)
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]


def test_the_dev_overlay_spreads_the_nats_servers_where_it_can(k8s_dev) -> None:
    # kind and minikube have one node: a requirement would leave two servers Pending.
    spec, pod, _ = _nats_server(k8s_dev)
    anti_affinity = pod["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti_affinity
    (preference,) = anti_affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    term = preference["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]


def test_a_disruption_stops_at_most_one_nats_server_keeping_the_quorum(k8s) -> None:
    spec, _, _ = _nats_server(k8s)
    budget = k8s.of_kind("PodDisruptionBudget")["nats"]["spec"]
    assert budget["selector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert budget["maxUnavailable"] == 1
    quorum = spec["replicas"] // 2 + 1
    assert spec["replicas"] - budget["maxUnavailable"] >= quorum


def test_each_kubernetes_workload_mounts_its_own_seed_only_where_its_settings_read_it(
    k8s,
) -> None:
    for kind in ("Deployment", "Job", "StatefulSet"):
        for name, doc in k8s.of_kind(kind).items():
            pod = doc["spec"]["template"]["spec"]
            seeds = {
                v["name"]: v["secret"]
                for v in pod.get("volumes", [])
                if "secret" in v and v["secret"]["secretName"].endswith("-nats")
            }
            user = K8S_USERS.get(name) if kind == "Deployment" else None
            if user is None:
                assert seeds == {}, f"{kind}/{name} connects to no NATS: it holds no seed"
                continue
            ((volume, secret),) = seeds.items()
            assert secret["secretName"] == f"{user}-nats"
            (item,) = secret["items"]
            assert item == {"key": f"{user}.nk", "path": f"{user}.nk"}
            assert secret["defaultMode"] == 0o440, "readable through the pod's group only"
            (container,) = pod["containers"]
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            seed = k8s.environment(container)["NATS_NKEY_SEED_FILE"][1]
            assert seed == f"{mounts[volume]}/{item['path']}", name
