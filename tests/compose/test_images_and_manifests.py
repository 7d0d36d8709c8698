"""The images this checkout built, measured in their running containers, and the Kubernetes
dev overlay rendered with exactly those images: every reference, port, probe path and
variable checked against them. ``docker compose config`` must be clean too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from docker.models.containers import Container

from api_testkit.paths import REPO

from .conftest import APP_SERVICES, ComposeStack

BASE_IMAGE = "python:3.11-slim-bookworm"
MAX_GROWTH = 1.5  # final image <= 1.5 x (base image + the venv)
COMPILERS = ("gcc", "cc", "g++", "c++", "clang", "cmake", "make", "flex", "bison", "uv")
# The development servers and the SMTP server only they need: the dev-mail image's alone.
DEVELOPMENT_PACKAGES = ("api_devservers", "aiosmtpd")
MEMBER_PACKAGE = {
    "gateway": "gateway",
    "users-service": "users_service",
    "orders-service": "orders_service",
    "books-graphql": "books_graphql",
    "webhooks-service": "webhooks_service",
}
RUNTIME_VARIABLES = {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}
# Compose services running an image's other process (its command): where that one listens.
PROCESS_SERVICES = {"dispatch": "webhooks-dispatcher"}


def run_in(container: Container, *command: str) -> str:
    result = container.exec_run(list(command))
    assert isinstance(result.output, bytes)  # not streamed
    output = result.output.decode(errors="replace")
    assert result.exit_code == 0, f"{container.name}: {command} -> {result.exit_code}\n{output}"
    return output.strip()


def python_in(container: Container, code: str) -> str:
    return run_in(container, "python", "-c", code)


@pytest.mark.parametrize("service", APP_SERVICES)
def test_each_image_is_small_non_root_healthchecked_and_has_no_compiler(
    compose_stack: ComposeStack, service: str
) -> None:
    container = compose_stack.container(service)
    image = compose_stack.image_of(service)
    base = compose_stack.client.images.get(BASE_IMAGE)
    venv_bytes = 1024 * int(run_in(container, "du", "-sk", "/app/.venv").split()[0])
    size, base_size = image.attrs["Size"], base.attrs["Size"]
    print(
        f"{service}: image {size / 1e6:.0f} MB = base {base_size / 1e6:.0f} MB"
        f" + venv {venv_bytes / 1e6:.0f} MB + {(size - base_size - venv_bytes) / 1e6:.0f} MB"
    )
    assert size <= MAX_GROWTH * (base_size + venv_bytes)

    config = image.attrs["Config"]
    assert config["User"] == "10001:10001"
    assert run_in(container, "id", "-u") == "10001"
    assert config["Healthcheck"]["Test"][0] == "CMD"
    found = python_in(
        container, f"import shutil; print([t for t in {COMPILERS!r} if shutil.which(t)])"
    )
    assert found == "[]", f"{service}'s final stage has build tools: {found}"


@pytest.mark.parametrize("service", APP_SERVICES)
def test_no_service_image_holds_the_development_servers(
    compose_stack: ComposeStack, service: str
) -> None:
    container = compose_stack.container(service)
    found = python_in(
        container,
        "import importlib.util as u; "
        f"print([m for m in {DEVELOPMENT_PACKAGES!r} if u.find_spec(m) is not None])",
    )
    assert found == "[]", f"{service}'s image holds development servers: {found}"
    # The check itself sees what a venv holds: the catcher's own image has them.
    mail = python_in(
        compose_stack.container("mail"),
        f"import importlib.util as u; print(all(u.find_spec(m) for m in {DEVELOPMENT_PACKAGES!r}))",
    )
    assert mail == "True"


def test_docker_compose_config_is_clean(compose_stack: ComposeStack) -> None:
    # The SDK does not read compose files: the CLI is the tool for this one check.
    docker_cli = shutil.which("docker", path="/usr/bin") or "docker"
    result = subprocess.run(
        [
            docker_cli,
            "compose",
            "--env-file",
            str(compose_stack.env_file),
            "--project-name",
            compose_stack.project,
            "config",
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", f"warnings: {result.stderr}"


# --- the Kubernetes dev overlay, with the images just built --------------------------------


@pytest.fixture(scope="module")
def rendered(compose_stack: ComposeStack, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """kubectl kustomize of the dev overlay with every member's image, and the mail catcher's,
    set to the one built."""
    subprocess.run(["bash", str(REPO / "deploy" / "check-tools.sh")], check=True, timeout=600)
    kubectl = REPO / ".cache" / "deploy-tools" / "bin" / "kubectl"
    folder = tmp_path_factory.mktemp("overlay")
    images = []
    for service, image in (*((s, s) for s in APP_SERVICES), ("mail", "dev-mail")):
        tags = compose_stack.image_of(service).tags
        assert tags, f"{service}'s image has no tag"
        name, _, tag = tags[0].rpartition(":")
        images.append({"name": f"api-platform/{image}", "newName": name, "newTag": tag})
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # kustomize takes relative paths only.
        "resources": [os.path.relpath(REPO / "deploy" / "k8s" / "overlays" / "dev", folder)],
        "images": images,
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    result = subprocess.run(
        [str(kubectl), "kustomize", "--load-restrictor=LoadRestrictionsNone", str(folder)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def member_containers(documents: list[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(member, kind, container) of every Deployment and Job running a member's image."""
    found = []
    for doc in documents:
        member = doc["metadata"].get("labels", {}).get("app.kubernetes.io/name")
        if doc["kind"] in ("Deployment", "Job") and member in MEMBER_PACKAGE:
            for container in doc["spec"]["template"]["spec"]["containers"]:
                found.append((member, doc["kind"], container))
    return found


def test_the_overlay_runs_exactly_the_images_built(
    compose_stack: ComposeStack, rendered: list[Any]
) -> None:
    workloads = member_containers(rendered)
    assert {member for member, _, _ in workloads} == set(APP_SERVICES)
    for member, kind, container in workloads:
        built = compose_stack.image_of(member)
        assert container["image"] in built.tags, f"{member} {kind}: {container['image']}"
        assert compose_stack.client.images.get(container["image"]).id == built.id


def test_every_probe_names_a_declared_port_and_a_path_the_running_container_serves(
    compose_stack: ComposeStack, rendered: list[Any]
) -> None:
    for member, kind, container in member_containers(rendered):
        if kind != "Deployment":
            continue
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        running = PROCESS_SERVICES.get(container["args"][0], member)
        image_config = compose_stack.image_of(running).attrs["Config"]
        exposed = {int(port.split("/")[0]) for port in image_config["ExposedPorts"]}
        assert ports["http"] in exposed, f"{member}: the image does not EXPOSE {ports['http']}"
        for probe in ("readinessProbe", "livenessProbe"):
            get = container[probe]["httpGet"]
            port = ports[get["port"]] if isinstance(get["port"], str) else get["port"]
            url = f"http://127.0.0.1:{port}{get['path']}"
            python_in(
                compose_stack.container(running),
                f"import urllib.request as r; assert r.urlopen({url!r}, timeout=3).status == 200",
            )


def test_every_variable_the_overlay_sets_is_one_the_image_reads(
    compose_stack: ComposeStack, rendered: list[Any]
) -> None:
    config_maps = {
        doc["metadata"]["name"]: doc.get("data", {})
        for doc in rendered
        if doc["kind"] == "ConfigMap"
    }
    for member, kind, container in member_containers(rendered):
        names = {variable["name"] for variable in container.get("env", [])}
        for source in container.get("envFrom", []):
            names |= set(config_maps[source["configMapRef"]["name"]])
        package = MEMBER_PACKAGE[member]
        # Asked of the image's own code: the aliases of its settings (and of the token
        # settings, which every verifier builds).
        reads = json.loads(
            python_in(
                compose_stack.container(member),
                "import json; from api_shared.settings import TokenSettings; "
                f"from {package}.settings import Settings; "
                "print(json.dumps(sorted({str(f.validation_alias) for c in (Settings, "
                "TokenSettings) for f in c.model_fields.values() if f.validation_alias})))",
            )
        )
        unknown = names - set(reads) - RUNTIME_VARIABLES
        assert not unknown, f"{member} {kind} sets variables its image never reads: {unknown}"
        image_env = dict(
            item.partition("=")[::2]
            for item in compose_stack.image_of(member).attrs["Config"]["Env"]
        )
        assert image_env["APP_ENV"] == "production"


def test_the_sandbox_is_published_on_loopback_only(compose_stack: ComposeStack) -> None:
    for service in ("gateway", "books-graphql"):
        for container in compose_stack.containers(service):
            bindings = container.attrs["NetworkSettings"]["Ports"]
            hosts = {b["HostIp"] for spec in bindings.values() if spec for b in spec}
            assert hosts == {"127.0.0.1"}, f"{container.name} publishes on {hosts}"
    unpublished = ("users-service", "orders-service", "webhooks-service", "webhooks-dispatcher")
    for service in (*unpublished, "postgres", "redis"):
        for container in compose_stack.containers(service):
            bindings = container.attrs["NetworkSettings"]["Ports"]
            assert not any(bindings.values()), f"{container.name} publishes {bindings}"


def test_redis_refuses_a_client_without_the_password(compose_stack: ComposeStack) -> None:
    redis = compose_stack.container("redis")
    anonymous = redis.exec_run(["sh", "-c", "unset REDISCLI_AUTH; redis-cli ping"])
    assert b"NOAUTH" in anonymous.output, anonymous.output
    assert run_in(redis, "redis-cli", "ping") == "PONG"  # with REDISCLI_AUTH, as configured


def test_redis_and_the_gateway_agree_on_the_password(compose_stack: ComposeStack) -> None:
    password = next(
        line.partition("=")[2]
        for line in reversed(Path(compose_stack.env_file).read_text().splitlines())
        if line.startswith("REDIS_PASSWORD=")
    )
    assert password
    gateway = compose_stack.container("gateway")
    redis_url = python_in(gateway, "import os; print(os.environ['REDIS_URL'])")
    assert redis_url == f"redis://:{password}@redis:6379/0"
