"""deploy/k8s: the base and the dev overlay, rendered by kustomize and checked against the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# The oldest Kubernetes minor still commonly run, and the newest the schemas know.
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
RUN_AS = 10001  # the Dockerfiles' USER


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_rendered_manifests_are_valid_kubernetes_objects(run_tool, k8s, version, tmp_path) -> None:
    rendered = tmp_path / f"{k8s.name}.yaml"
    rendered.write_text(yaml.safe_dump_all(k8s.documents))
    result = run_tool("kubernetes-validate", "--strict", "--quiet", "-k", version, rendered)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_validation_rejects_an_unknown_field(run_tool, tmp_path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n"
        "spec: {ports: [{port: 80, targetPrt: 80}]}\n"
    )
    result = run_tool("kubernetes-validate", "--strict", "--quiet", broken)
    assert result.returncode != 0


def test_no_secret_is_committed(k8s) -> None:
    assert not k8s.of_kind("Secret"), "Secrets are created out of band (deploy/README.md)"


def test_each_component_has_a_deployment_service_autoscaler_and_disruption_budget(
    k8s, service
) -> None:
    deployment = k8s.of_kind("Deployment")[service.member]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    job_pod_labels = [
        job["spec"]["template"]["metadata"]["labels"] for job in k8s.of_kind("Job").values()
    ]

    svc = k8s.of_kind("Service")[service.member]
    assert svc["spec"]["ports"] == [{"name": "http", "port": service.port, "targetPort": "http"}]
    selector = svc["spec"]["selector"]
    assert selector.items() <= pod_labels.items()
    assert not any(selector.items() <= labels.items() for labels in job_pod_labels)

    hpa = k8s.of_kind("HorizontalPodAutoscaler")[service.member]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": service.member,
    }
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]

    pdb = k8s.of_kind("PodDisruptionBudget")[service.member]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    # maxUnavailable, not minAvailable: a one-replica dev install can still drain a node.
    assert pdb["spec"]["maxUnavailable"] == 1


def test_the_autoscaler_alone_sets_the_replica_count(k8s, service) -> None:
    # A replicas field would be re-applied over the autoscaler's choice at every apply.
    assert "replicas" not in k8s.of_kind("Deployment")[service.member]["spec"]


ADMIN_PORT = {"gateway": 9000}  # GATEWAY_ADMIN_PORT: /ready and /metrics, off the public port


def test_servers_are_probed_on_ready_and_health_at_the_service_port(k8s, service) -> None:
    pod = k8s.of_kind("Deployment")[service.member]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    ports = [{"name": "http", "containerPort": service.port}]
    ready_port = "http"
    if service.member in ADMIN_PORT:
        ports.append({"name": "admin", "containerPort": ADMIN_PORT[service.member]})
        ready_port = "admin"
    assert container["ports"] == ports

    http = {"name": "http", "containerPort": service.port}
    # The gateway serves /ready on its admin port only (GATEWAY_ADMIN_PORT, 9000).
    ready_port = "admin" if service.member == "gateway" else "http"
    admin = [{"name": "admin", "containerPort": 9000}] if ready_port == "admin" else []
    assert container["ports"] == [http, *admin]
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": ready_port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["args"] == ["serve"]


def test_the_gateways_service_does_not_expose_its_admin_port(k8s) -> None:
    ports = k8s.of_kind("Service")["gateway"]["spec"]["ports"]
    assert [port["targetPort"] for port in ports] == ["http"]


# --- NetworkPolicies --------------------------------------------------------------------------


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels and matchExpressions In) matches ``labels``."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def _pod_labels(k8s) -> dict[str, dict[str, str]]:
    """Every workload's pod labels by a readable name (Deployments, StatefulSets, Jobs)."""
    pods = {}
    for kind in ("Deployment", "StatefulSet", "Job"):
        for name, doc in k8s.of_kind(kind).items():
            pods[name] = doc["spec"]["template"]["metadata"]["labels"]
    return pods


# Pods outside the platform's namespace: (their namespace's labels, their own labels).
EXTERNAL = {
    "ingress-nginx/controller": (
        {"kubernetes.io/metadata.name": "ingress-nginx"},
        {"app.kubernetes.io/name": "ingress-nginx"},
    ),
    "monitoring/prometheus": (
        {"kubernetes.io/metadata.name": "monitoring"},
        {"app.kubernetes.io/name": "prometheus"},
    ),
    # Another pod of the monitoring namespace: not the Prometheus the policies let in.
    "monitoring/other": ({"kubernetes.io/metadata.name": "monitoring"}, {"app": "other"}),
}


def _allowed(k8s, source: str, target: str, port: int) -> bool:
    """Whether the policies let pod ``source`` open a connection to pod ``target``:``port``.

    Both sides must allow it: an egress rule of a policy selecting the source, and an
    ingress rule of a policy selecting the target (or none selects it for that direction).
    ``source`` may be a pod of another namespace (``EXTERNAL``): these policies do not
    select it, so only the target's ingress rules decide.
    """
    pods = _pod_labels(k8s)
    policies = list(k8s.of_kind("NetworkPolicy").values())

    def rules(pod: str, direction: str) -> list[dict[str, Any]] | None:
        selecting = [
            p
            for p in policies
            if _selects(p["spec"]["podSelector"], pods[pod])
            and direction in p["spec"]["policyTypes"]
        ]
        if not selecting:
            return None  # not isolated in that direction
        key = direction.lower()
        return [rule for p in selecting for rule in p["spec"].get(key, [])]

    def is_peer(entry: dict[str, Any], peer: str) -> bool:
        if "ipBlock" in entry:
            # Pods have private addresses, which every ipBlock excepts (checked below).
            return False
        if peer in EXTERNAL:
            namespace, labels = EXTERNAL[peer]
            return "namespaceSelector" in entry and (
                _selects(entry["namespaceSelector"], namespace)
                and _selects(entry.get("podSelector", {}), labels)
            )
        return "namespaceSelector" not in entry and _selects(entry["podSelector"], pods[peer])

    def matches(rule: dict[str, Any], peer_key: str, peer: str) -> bool:
        ports = rule.get("ports")
        if ports is not None and not any(p.get("port") == port for p in ports):
            return False
        peers = rule.get(peer_key)
        if peers is None:
            return True  # any peer
        return any(is_peer(entry, peer) for entry in peers)

    egress = None if source in EXTERNAL else rules(source, "Egress")
    ingress = rules(target, "Ingress")
    out_ok = egress is None or any(matches(rule, "to", target) for rule in egress)
    in_ok = ingress is None or any(matches(rule, "from", source) for rule in ingress)
    return out_ok and in_ok


SERVICE_PORTS = {"gateway": 8000, "users-service": 8001, "orders-service": 8002}
SERVICE_PORTS |= {"books-graphql": 4000, "postgres": 5432, "redis": 6379, "nats": 4222}
SERVICE_PORTS |= {"webhooks-service": 8003, "webhooks-dispatcher": 8004}
SERVICE_PORTS |= {"mail": 1025}  # the dev overlay's mail catcher: its SMTP port
# Where Prometheus finds each server's /metrics: the gateway's admin port, else its own.
METRICS_PORTS = {"gateway": 9000, "users-service": 8001, "orders-service": 8002}
METRICS_PORTS |= {"books-graphql": 4000, "webhooks-service": 8003, "webhooks-dispatcher": 8004}
# The NATS servers' routes (the cluster's port): between the servers only.
CLUSTER_PORTS = {"nats": 6222}
# The mail catcher's page and API: no pod's (kubectl port-forward reaches it).
MAIL_HTTP_PORT = 8025
TARGETS = sorted(
    set(SERVICE_PORTS.items())
    | set(METRICS_PORTS.items())
    | set(CLUSTER_PORTS.items())
    | {("mail", MAIL_HTTP_PORT)}
)
# Who may connect to whom, on which port, in the dev overlay (which runs PostgreSQL and
# Redis in-cluster).
ALLOWED = {
    (source, target, SERVICE_PORTS[target])
    for source, target in (
        ("ingress-nginx/controller", "gateway"),
        ("gateway", "users-service"),
        ("gateway", "orders-service"),
        ("gateway", "books-graphql"),
        ("gateway", "webhooks-service"),
        ("gateway", "redis"),
        ("users-service", "redis"),  # its own budgets (accounts, sessions)
        ("orders-service", "users-service"),
        ("orders-service", "books-graphql"),
        ("users-service", "postgres"),
        ("orders-service", "postgres"),
        ("books-graphql", "postgres"),
        ("webhooks-service", "postgres"),
        ("webhooks-dispatcher", "postgres"),
        ("users-service-migrate", "postgres"),
        ("orders-service-migrate", "postgres"),
        ("books-graphql-migrate", "postgres"),
        ("webhooks-service-migrate", "postgres"),
        # The outbox relays publish events; orders-service also consumes users' events, the
        # webhooks dispatcher every event.
        ("users-service", "nats"),
        ("orders-service", "nats"),
        ("webhooks-dispatcher", "nats"),
        ("webhooks-service", "users-service"),  # JWKS, its callers' standing
        ("users-service", "mail"),  # verification and reset messages, to the dev catcher
    )
} | {("monitoring/prometheus", target, port) for target, port in METRICS_PORTS.items()}


def test_network_policies_allow_exactly_the_connections_the_platform_needs(k8s_dev) -> None:
    for source in [*_pod_labels(k8s_dev), *EXTERNAL]:
        for target, port in TARGETS:
            if source == target:
                continue
            expected = (source, target, port) in ALLOWED
            assert _allowed(k8s_dev, source, target, port) == expected, (
                f"{source} -> {target}:{port} should be {'allowed' if expected else 'denied'}"
            )


def test_the_nats_servers_reach_each_other_on_their_cluster_port_and_nothing_else(
    k8s_dev,
) -> None:
    # The routes carry every event and JetStream's replication: no other pod reaches them
    # (the test above), and a server opens no other connection.
    assert _allowed(k8s_dev, "nats", "nats", CLUSTER_PORTS["nats"])
    for target, port in TARGETS:
        if (target, port) != ("nats", CLUSTER_PORTS["nats"]):
            assert not _allowed(k8s_dev, "nats", target, port), f"nats -> {target}:{port}"


PRIVATE_RANGES: tuple[str, ...]
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16")
PRIVATE_RANGES += ("100.64.0.0/10", "127.0.0.0/8", "fc00::/7", "fe80::/10", "fec0::/10")
PRIVATE_RANGES += ("::1/128",)


def _internet_egress(k8s, pod: str) -> set[int | None]:
    """The ports ``pod`` may open to addresses outside the cluster (None: any port)."""
    labels = _pod_labels(k8s)[pod]
    ports: set[int | None] = set()
    for policy in k8s.of_kind("NetworkPolicy").values():
        if "Egress" not in policy["spec"]["policyTypes"]:
            continue
        if not _selects(policy["spec"]["podSelector"], labels):
            continue
        for rule in policy["spec"].get("egress", []):
            to = rule.get("to")
            if to is None or any("ipBlock" in peer for peer in to):
                ports |= {p["port"] for p in rule.get("ports", [])} or {None}
    return ports


# Who reaches the internet (public addresses), on which ports: the dispatcher the webhook
# endpoints (HTTPS), users-service its mail server (SMTP, SMTPS, submission).
INTERNET_EGRESS = {"webhooks-dispatcher": {443}, "users-service": {25, 465, 587}}


def test_only_the_dispatcher_and_users_service_reach_the_internet_at_public_addresses(
    k8s_dev,
) -> None:
    policies = k8s_dev.of_kind("NetworkPolicy")
    for name, policy in policies.items():
        for rule in policy["spec"].get("egress", []):
            for peer in rule.get("to", []):
                if "ipBlock" in peer:
                    assert name in INTERNET_EGRESS, name
                    excepted = set(peer["ipBlock"]["except"])
                    family = ":" in peer["ipBlock"]["cidr"]
                    wanted = {r for r in PRIVATE_RANGES if (":" in r) == family}
                    assert wanted <= excepted, f"{name}: {wanted - excepted} reachable"
    # Port-only rules (PostgreSQL, Redis: external to the base) are not the internet's.
    for pod in _pod_labels(k8s_dev):
        allowed = _internet_egress(k8s_dev, pod) - {5432, 6379}
        expected = INTERNET_EGRESS.get(pod, set())
        assert allowed == expected, f"{pod} may reach the internet on {allowed}"


def test_the_dispatcher_reaches_postgresql_only_at_the_database(k8s, k8s_dev) -> None:
    # It connects to URLs others choose: no port-only rule, which would let an endpoint on
    # port 5432 anywhere (another platform's database) be reached.
    assert _internet_egress(k8s_dev, "webhooks-dispatcher") == {443}
    assert _allowed(k8s_dev, "webhooks-dispatcher", "postgres", 5432)
    policy = k8s.of_kind("NetworkPolicy")["webhooks-dispatcher"]["spec"]
    (database,) = [r for r in policy["egress"] if {"protocol": "TCP", "port": 5432} in r["ports"]]
    assert database["to"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "postgres"}}}
    ]


def test_each_server_is_annotated_for_scraping_on_the_port_prometheus_may_reach(
    k8s, service
) -> None:
    template = k8s.of_kind("Deployment")[service.member]["spec"]["template"]
    (container,) = template["spec"]["containers"]
    annotations = template["metadata"]["annotations"]
    port = int(annotations["prometheus.io/port"])

    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert port == METRICS_PORTS[service.member]
    assert port in {p["containerPort"] for p in container["ports"]}
    assert _allowed(k8s, "monitoring/prometheus", service.member, port)
    assert not _allowed(k8s, "monitoring/other", service.member, port)


def test_no_pod_reaches_another_on_a_port_it_does_not_serve(k8s_dev) -> None:
    # The gateway's admin port (/ready, /metrics) and the services' ports other than their own.
    for source in _pod_labels(k8s_dev):
        assert not _allowed(k8s_dev, source, "gateway", 9000), source
        assert not _allowed(k8s_dev, source, "users-service", 5432), source
        assert not _allowed(k8s_dev, source, "nats", 8222), source  # its monitoring port


def test_every_pod_is_isolated_both_ways_and_may_resolve_names(k8s) -> None:
    policies = k8s.of_kind("NetworkPolicy")
    deny = policies["default-deny"]["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    dns = policies["dns-egress"]["spec"]
    assert dns["podSelector"] == {}
    (rule,) = dns["egress"]
    assert {(p["protocol"], p["port"]) for p in rule["ports"]} == {("UDP", 53), ("TCP", 53)}


def test_only_the_ingress_controller_reaches_the_gateway(k8s) -> None:
    rules = k8s.of_kind("NetworkPolicy")["gateway"]["spec"]["ingress"]
    (public,) = [rule for rule in rules if {"protocol": "TCP", "port": 8000} in rule["ports"]]
    assert public["ports"] == [{"protocol": "TCP", "port": 8000}]
    (peer,) = public["from"]
    assert peer == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}
    }


def test_the_dev_overlay_trusts_forwarded_addresses_from_the_ingress_range_only(k8s_dev) -> None:
    trusted = k8s_dev.of_kind("ConfigMap")["gateway-config"]["data"]["TRUSTED_PROXIES"]
    assert trusted == "10.244.0.0/16"
    assert "TRUSTED_PROXIES" in (ROOT / "deploy" / "README.md").read_text()


def test_the_dev_redis_requires_the_password_the_gateway_url_carries(k8s_dev) -> None:
    (redis,) = k8s_dev.of_kind("Deployment")["redis"]["spec"]["template"]["spec"]["containers"]
    assert "--requirepass" in " ".join(redis["args"])
    (auth,) = [v for v in redis["env"] if v["name"] == "REDISCLI_AUTH"]
    assert auth["valueFrom"]["secretKeyRef"] == {
        "name": "redis-credentials",
        "key": "REDIS_PASSWORD",
    }


def test_pods_drain_before_sigterm(k8s, service) -> None:
    # Endpoints update asynchronously: without the pause, new requests reach a stopping pod.
    pod = k8s.of_kind("Deployment")[service.member]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    # The drain plus the server's 15 s grace fit in the pod's termination grace period.
    assert int(command[1]) + 15 <= pod.get("terminationGracePeriodSeconds", 30)


def test_every_container_has_resource_requests_and_limits(k8s) -> None:
    for doc in k8s.documents:
        if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                resources = container.get("resources", {})
                for bound in ("requests", "limits"):
                    assert {"cpu", "memory"} <= set(resources.get(bound, {})), (
                        f"{doc['kind']}/{doc['metadata']['name']}: {bound}"
                    )


def test_each_database_service_has_a_migration_job_with_its_image(k8s, service) -> None:
    jobs = k8s.of_kind("Job")
    name = f"{service.member}-migrate"
    if not service.has_database:
        assert name not in jobs
        return
    job = jobs[name]
    pod = job["spec"]["template"]["spec"]
    server = k8s.of_kind("Deployment")[service.member]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (server_container,) = server["containers"]
    assert container["args"] == ["migrate"]
    assert container["image"] == server_container["image"]
    # The same settings as the server: production configuration is validated to migrate too.
    assert container.get("envFrom") == server_container.get("envFrom")
    assert container.get("env") == server_container.get("env")
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] >= 1


def test_service_pods_run_as_the_images_non_root_user_with_a_read_only_root(k8s) -> None:
    for workload in k8s.workloads():
        context = workload.pod["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == RUN_AS
        assert workload.pod["automountServiceAccountToken"] is False
        for container in workload.pod["containers"]:
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }, workload.name


# URLs a browser opens, not a pod: the front end the mails' links point to.
BROWSER_URLS = {"FRONTEND_URL"}


def test_every_url_names_a_kubernetes_service_on_the_port_it_serves(k8s) -> None:
    ports = {
        name: {port["port"] for port in svc["spec"]["ports"]}
        for name, svc in k8s.of_kind("Service").items()
    }
    for name, config_map in k8s.of_kind("ConfigMap").items():
        for key, value in config_map.get("data", {}).items():
            if key in BROWSER_URLS:
                continue
            if value.startswith(("http://", "smtp://")):
                url = urlsplit(value)
                assert url.hostname in ports, f"{name} {key}: no Service {url.hostname}"
                assert url.port in ports[url.hostname], f"{name} {key}: port {url.port}"


def test_the_users_service_mounts_the_signing_key_where_its_settings_point(k8s) -> None:
    for workload in k8s.workloads():
        if workload.service.member != "users-service":
            continue
        (container,) = workload.pod["containers"]
        key_file = k8s.environment(container)["JWT_PRIVATE_KEY_FILE"][1]
        assert key_file
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in workload.pod["volumes"]}
        (volume_name,) = [
            n
            for n, v in volumes.items()
            if v.get("secret", {}).get("secretName") == "jwt-signing-key"
        ]
        secret = volumes[volume_name]["secret"]
        (item,) = secret["items"]
        assert f"{mounts[volume_name]}/{item['path']}" == key_file
        assert secret["secretName"] == "jwt-signing-key"
        # Secret files belong to root and the pod's fsGroup: readable through the group only.
        mode = secret["defaultMode"]
        assert workload.pod["securityContext"]["fsGroup"] == RUN_AS
        assert mode & 0o040, f"mode {mode:o}: the group cannot read the key"
        assert not mode & 0o007, f"mode {mode:o}: everyone can read the key"


def test_the_webhooks_api_and_dispatcher_mount_the_secrets_key_where_their_settings_point(
    k8s,
) -> None:
    mounted_by = set()
    for workload in k8s.workloads():
        if workload.service.member != "webhooks-service":
            continue
        (container,) = workload.pod["containers"]
        key_file = k8s.environment(container)["WEBHOOK_SECRETS_KEY_FILE"][1]
        volumes = {
            v["name"]: v
            for v in workload.pod["volumes"]
            if v.get("secret", {}).get("secretName") == "webhook-secrets-key"
        }
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        (volume_name,) = volumes  # its NATS seed, the dispatcher's, is test_broker.py's
        secret = volumes[volume_name]["secret"]
        (item,) = secret["items"]
        assert f"{mounts[volume_name]}/{item['path']}" == key_file
        assert secret["secretName"] == "webhook-secrets-key"
        mode = secret["defaultMode"]
        assert workload.pod["securityContext"]["fsGroup"] == RUN_AS
        assert mode & 0o040, f"mode {mode:o}: the group cannot read the key"
        assert not mode & 0o007, f"mode {mode:o}: everyone can read the key"
        mounted_by.add(container["args"][0])
    assert mounted_by == {"serve", "dispatch", "migrate"}


def test_the_dev_overlay_runs_one_replica_of_dev_images_in_its_namespace(k8s_dev) -> None:
    for hpa in k8s_dev.of_kind("HorizontalPodAutoscaler").values():
        assert hpa["spec"]["minReplicas"] == 1
    (namespace,) = k8s_dev.of_kind("Namespace")
    for doc in k8s_dev.documents:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace
    for workload in k8s_dev.workloads():
        for container in workload.pod["containers"]:
            assert container["image"] == f"api-platform/{workload.service.member}:dev"


def test_the_dev_overlay_brings_postgres_initialised_by_the_compose_init_script(
    k8s_dev,
) -> None:
    (config_map,) = [
        cm for name, cm in k8s_dev.of_kind("ConfigMap").items() if name.startswith("postgres-init")
    ]
    script = (ROOT / "deploy" / "postgres" / "init.sh").read_text()
    assert config_map["data"] == {"10-service-databases.sh": script}
    postgres = k8s_dev.of_kind("StatefulSet")["postgres"]["spec"]["template"]["spec"]
    (init_volume,) = [v for v in postgres["volumes"] if "configMap" in v]
    assert init_volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert init_volume["configMap"]["defaultMode"] == 0o555
    assert "redis" in k8s_dev.of_kind("Service")


def test_the_readme_documents_every_secret_the_manifests_reference(k8s_dev) -> None:
    readme = (ROOT / "deploy" / "README.md").read_text()
    for name in sorted(secret_names(k8s_dev)):
        assert name in readme, f"deploy/README.md does not say how to create {name}"


def secret_names(manifests) -> set[str]:
    names = set()
    for doc in manifests.documents:
        if doc["kind"] not in ("Deployment", "StatefulSet", "Job"):
            continue
        pod = doc["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for variable in container.get("env", []):
                if "secretKeyRef" in variable.get("valueFrom", {}):
                    names.add(variable["valueFrom"]["secretKeyRef"]["name"])
        names |= {v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
    return names


# --- Mail ------------------------------------------------------------------------------------


def _users_config(manifests) -> dict[str, str]:
    data: dict[str, str] = manifests.of_kind("ConfigMap")["users-service-config"]["data"]
    return data


def test_the_base_leaves_the_mail_server_to_the_operator(k8s_base) -> None:
    config = _users_config(k8s_base)
    # Empty is "not configured": mail waits in the outbox until SMTP_URL names a server.
    assert config["SMTP_URL"] == ""
    assert config["SMTP_PASSWORD_FILE"] == ""
    assert config["MAIL_FROM"]
    assert config["FRONTEND_URL"].startswith("https://")


def test_the_smtp_password_is_an_optional_secret_file_in_the_servers_pods_only(k8s) -> None:
    readme = (ROOT / "deploy" / "README.md").read_text()
    for workload in k8s.workloads():
        if workload.service.member != "users-service":
            continue
        (container,) = workload.pod["containers"]
        environment = k8s.environment(container)
        # Never a value of the environment, which the pod's spec shows.
        assert "SMTP_PASSWORD" not in environment
        assert environment["SMTP_PASSWORD_FILE"][0] == "configmap/users-service-config"
        volumes = [
            v for v in workload.pod["volumes"] if v.get("secret", {}).get("secretName") == "smtp"
        ]
        if workload.kind == "Job":
            assert not volumes, "the migration Job sends no mail"
            continue
        (volume,) = volumes
        secret = volume["secret"]
        assert secret["optional"] is True, "the pod must start without it"
        mode = secret["defaultMode"]
        assert mode & 0o040, f"mode {mode:o}: the group cannot read the password"
        assert not mode & 0o007, f"mode {mode:o}: everyone can read the password"
        (item,) = secret["items"]
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        mount = mounts[volume["name"]]
        assert mount["readOnly"] is True
        # The path the ConfigMap's comment and deploy/README.md tell the operator to set.
        assert f"SMTP_PASSWORD_FILE={mount['mountPath']}/{item['path']}" in readme


def _mail_catcher(k8s_dev) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The dev overlay's mail catcher: its Deployment's spec, pod spec and container."""
    spec = k8s_dev.of_kind("Deployment")["mail"]["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    return spec, pod, container


def test_the_dev_overlay_runs_the_mail_catcher_from_its_own_development_image(k8s_dev) -> None:
    spec, _, container = _mail_catcher(k8s_dev)
    assert spec["replicas"] == 1, "one store in memory"
    # The Dockerfile's dev-mail stage: the catcher is its entrypoint; no service's image has it.
    assert container["image"] == "api-platform/dev-mail:dev"
    assert "command" not in container
    assert "args" not in container
    # Its default is the loopback, which neither users-service nor the Service reaches.
    all_interfaces = ("value", "0.0.0.0")  # noqa: S104 - a container must listen on all
    assert k8s_dev.environment(container)["MAIL_CATCHER_HOST"] == all_interfaces
    assert container["ports"] == [
        {"name": "smtp", "containerPort": 1025},
        {"name": "http", "containerPort": MAIL_HTTP_PORT},
    ]
    assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}

    service = k8s_dev.of_kind("Service")["mail"]["spec"]
    assert service["ports"] == [
        {"name": "smtp", "port": 1025, "targetPort": "smtp"},
        {"name": "http", "port": MAIL_HTTP_PORT, "targetPort": "http"},
    ]
    assert service["selector"].items() <= _pod_labels(k8s_dev)["mail"].items()
    assert "mail" not in k8s_dev.of_kind("HorizontalPodAutoscaler")


def test_the_mail_catcher_runs_locked_down_like_the_services(k8s_dev) -> None:
    _, pod, container = _mail_catcher(k8s_dev)
    context = pod["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == RUN_AS
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def test_the_dev_users_service_sends_to_the_catcher_and_only_it_reaches_it(k8s_dev) -> None:
    config = _users_config(k8s_dev)
    assert config["SMTP_URL"] == "smtp://mail:1025"
    assert config["SMTP_PASSWORD_FILE"] == "", "the catcher takes no password"
    # Its links open the gateway as `kubectl port-forward svc/gateway 8000:8000` serves it.
    assert config["FRONTEND_URL"] == "http://127.0.0.1:8000"
    assert _allowed(k8s_dev, "users-service", "mail", 1025)
    for source in [*_pod_labels(k8s_dev), *EXTERNAL]:
        assert not _allowed(k8s_dev, source, "mail", MAIL_HTTP_PORT), source
    # The catcher opens no connection (DNS aside): it only keeps what it receives.
    for target, port in TARGETS:
        assert not _allowed(k8s_dev, "mail", target, port), f"mail -> {target}:{port}"
    assert _internet_egress(k8s_dev, "mail") == set()
    readme = (ROOT / "deploy" / "README.md").read_text()
    assert "port-forward svc/mail 8025" in readme
