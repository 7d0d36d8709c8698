"""NATS in the deployments: the users and permissions of ``api_shared.events.access`` in one
config file (compose mounts it, Kubernetes makes it a ConfigMap), each user known by its
public key, each process holding its own seed and no other, the monitoring port nowhere
reachable but from inside the server's own container."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from api_shared.events.access import MONITORING, SERVICES, deployment_config
from api_shared.events.credentials import seed_file

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "nats" / "nats.conf"
MOUNTED_CONFIG = "/etc/nats/nats.conf"
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


def test_kubernetes_runs_nats_on_the_committed_config_with_each_users_public_key(k8s) -> None:
    pod = k8s.of_kind("StatefulSet")["nats"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert f"--config={MOUNTED_CONFIG}" in container["args"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (volume,) = [v for v in pod["volumes"] if "configMap" in v]
    assert mounts[volume["name"]] == str(Path(MOUNTED_CONFIG).parent)
    config_map = k8s.of_kind("ConfigMap")[volume["configMap"]["name"]]
    assert config_map["data"] == {"nats.conf": CONFIG.read_text()}
    keys = {v["name"]: v["valueFrom"]["secretKeyRef"] for v in container["env"]}
    assert keys == {
        user.nkey_variable: {"name": "nats-user-keys", "key": user.nkey_variable}
        for user in SERVICES
    }


def test_kubernetes_offers_nats_clients_their_port_and_nothing_else(k8s) -> None:
    (container,) = k8s.of_kind("StatefulSet")["nats"]["spec"]["template"]["spec"]["containers"]
    assert container["ports"] == [{"name": "client", "containerPort": 4222}]
    assert not [arg for arg in container["args"] if "http" in arg or arg == "-m"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert "httpGet" not in container[probe]
        assert f"http://{MONITORING}/healthz" in " ".join(container[probe]["exec"]["command"])
    service = k8s.of_kind("Service")["nats"]
    assert [port["port"] for port in service["spec"]["ports"]] == [4222]


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
