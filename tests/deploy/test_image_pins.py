"""Images pinned by digest where a registry is used.

No digest is committed: the defaults are tags, so that local stand-ins and registry mirrors
(which cannot serve Docker Hub's digests) keep working, and a digest nobody here could
verify is never written down. What is checked instead:

- every public image, pulled (compose) or built from (the Dockerfile's bases), is one
  ``*_IMAGE`` variable, so that pinning ``.env`` pins everything: no reference escapes it;
- ``deploy/pin-images.sh`` writes each as ``name:tag@sha256:<digest>`` from the registry (a
  stub ``docker`` stands in for the registry here), and ``--check`` is the release gate;
- Kubernetes runs only the project's own images, which an overlay pins by digest with
  kustomize's ``images:`` (rendered here).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PIN = ROOT / "deploy" / "pin-images.sh"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
VARIABLE = re.compile(r"^\$\{(?P<name>[A-Z][A-Z0-9_]*_IMAGE):-(?P<default>[^}]+)\}$")
FROM = re.compile(r"^FROM\s+(?P<image>\S+)(?:\s+AS\s+(?P<stage>\S+))?", re.MULTILINE | re.I)
ARG = re.compile(r"^ARG\s+(?P<name>[A-Z][A-Z0-9_]*_IMAGE)=(?P<default>\S+)$", re.MULTILINE)
MEMBERS = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")

# A registry for the script: `docker pull` succeeds unless the name says "standin" (an image
# that exists only locally); `docker image inspect` reports one RepoDigest per reference,
# derived from it, as Docker writes them (Docker Hub's names without docker.io/library/).
STUB_DOCKER = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    printf '%s\\n' "$*" >>"$STUB_LOG"
    case $1 in
      pull) [[ $3 == *standin* ]] && exit 1; exit 0 ;;
      image) reference=${!#}; repository=${reference%:*}
             printf '%s@sha256:%s\\n' "${repository#library/}" \\
               "$(printf %s "$reference" | sha256sum | cut -c1-64)" ;;
    esac
    """
)


def read_env_file(path: Path) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in path.read_text().splitlines() if line and line[0] != "#"
    )


REGISTRY = "${IMAGE_REGISTRY:-api-platform}/"


def stub_digest(reference: str) -> str:
    return "sha256:" + hashlib.sha256(reference.encode()).hexdigest()


def built_here(compose, image: str) -> bool:
    """Whether ``image`` is one that a service of the file builds from this checkout, at any
    of its tags (NATS runs orders-service's image, each migration its service's)."""
    built = {d["image"] for d in compose.services.values() if "build" in d}
    return image.startswith(REGISTRY) and _repository(image) in {_repository(b) for b in built}


def _repository(image: str) -> str:
    """``users-service`` of ``${IMAGE_REGISTRY:-api-platform}/users-service:${...}``."""
    return image.split("/")[-1].split(":")[0]


def public_image_variables(compose) -> dict[str, str]:
    """``*_IMAGE`` variable → its default, for every image compose pulls or builds from."""
    found: dict[str, str] = {}
    for name, definition in compose.services.items():
        references = list(definition.get("build", {}).get("args", {}).values())
        if "build" not in definition and not built_here(compose, definition["image"]):
            references.append(definition["image"])
        for reference in references:
            if not str(reference).startswith("${") or "_IMAGE" not in str(reference):
                continue  # MEMBER, say: not an image
            match = VARIABLE.match(str(reference))
            assert match, f"{name}: {reference} is not ${{NAME_IMAGE:-default}}"
            found[match["name"]] = match["default"]
    return found


def test_every_public_image_compose_uses_is_one_variable_of_env_example(
    compose, env_example
) -> None:
    variables = public_image_variables(compose)

    assert {"PYTHON_IMAGE", "UV_IMAGE", "POSTGRES_IMAGE", "REDIS_IMAGE"} <= set(variables)
    assert {name for name in env_example if name.endswith("_IMAGE")} == set(variables)
    for name, default in variables.items():
        assert env_example[name] == default, f".env.example and compose disagree on {name}"


def test_the_dockerfile_builds_from_its_stages_and_image_arguments_only(compose) -> None:
    text = (ROOT / "Dockerfile").read_text()
    arguments = {m["name"]: m["default"] for m in ARG.finditer(text)}
    stages: set[str] = set()
    for match in FROM.finditer(text):
        image = match["image"]
        argument = re.fullmatch(r"\$\{([A-Z][A-Z0-9_]*)\}", image)
        if argument is not None:
            assert argument[1] in arguments, f"FROM {image}: no ARG {argument[1]}=<image>"
        else:
            # A stage of this file (toolchain-${MEMBER} is one of the toolchain-* stages).
            assert image in stages or image == "toolchain-${MEMBER}", f"FROM {image}"
        if match["stage"]:
            stages.add(match["stage"])
    defaults = public_image_variables(compose)
    assert arguments == {name: defaults[name] for name in arguments}, "one default per image"


def test_a_pinned_env_pins_every_image_compose_pulls_or_builds_from(compose, filled_env) -> None:
    pinned = {
        **filled_env,
        **{
            name: f"{value}@{stub_digest(value)}"
            for name, value in filled_env.items()
            if name.endswith("_IMAGE")
        },
    }
    references = []
    for definition in compose.services.values():
        for argument, value in definition.get("build", {}).get("args", {}).items():
            if argument.endswith("_IMAGE"):
                references.append(compose.interpolate(str(value), pinned))
        if "build" not in definition and not built_here(compose, definition["image"]):
            references.append(compose.interpolate(definition["image"], pinned))

    assert len(references) >= 7
    assert [reference for reference in references if not DIGEST.search(reference)] == []


@pytest.fixture
def stub_docker(tmp_path: Path) -> dict[str, str]:
    """The environment that points the script at the stub registry; its log of calls."""
    stub = tmp_path / "bin" / "docker"
    stub.parent.mkdir()
    stub.write_text(STUB_DOCKER)
    stub.chmod(0o755)
    return {"DOCKER": str(stub), "STUB_LOG": str(tmp_path / "docker.log")}


def pin(env_file: Path, *arguments: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(PIN), *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, "ENV_FILE": str(env_file), **env},
        check=False,
        timeout=60,
    )


def calls(stub_docker: dict[str, str]) -> list[str]:
    log = Path(stub_docker["STUB_LOG"])
    return log.read_text().splitlines() if log.exists() else []


def test_pin_images_pins_each_image_of_env_to_its_registry_digest_and_nothing_else(
    tmp_path: Path, stub_docker: dict[str, str]
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text((ROOT / ".env.example").read_text())
    env_file.chmod(0o600)
    example = read_env_file(env_file)

    result = pin(env_file, **stub_docker)

    assert result.returncode == 0, result.stderr
    pinned = read_env_file(env_file)
    for name, value in example.items():
        if name.endswith("_IMAGE"):
            assert pinned[name] == f"{value}@{stub_digest(value)}", name
        else:
            assert pinned[name] == value, f"{name} changed"
    assert env_file.stat().st_mode & 0o777 == 0o600  # .env holds passwords
    pulled = [call.split()[-1] for call in calls(stub_docker) if call.startswith("pull")]
    assert sorted(pulled) == sorted(v for n, v in example.items() if n.endswith("_IMAGE"))


def test_pin_images_leaves_pinned_images_alone_unless_asked_to_refresh(
    tmp_path: Path, stub_docker: dict[str, str]
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:" + "0" * 64 + "\n")
    compose_rest = {
        name: value
        for name, value in read_env_file(ROOT / ".env.example").items()
        if name.endswith("_IMAGE") and name != "PYTHON_IMAGE"
    }
    env_file.write_text(
        env_file.read_text() + "".join(f"{name}={value}\n" for name, value in compose_rest.items())
    )

    kept = pin(env_file, **stub_docker)
    asked_first = calls(stub_docker)
    after_pin = read_env_file(env_file)
    refreshed = pin(env_file, "--refresh", **stub_docker)

    reference = "python:3.11-slim-bookworm"
    assert kept.returncode == 0, kept.stderr
    assert after_pin["PYTHON_IMAGE"] == f"{reference}@sha256:{'0' * 64}"
    assert not [call for call in asked_first if reference in call]  # not even asked
    assert refreshed.returncode == 0, refreshed.stderr
    assert read_env_file(env_file)["PYTHON_IMAGE"] == f"{reference}@{stub_digest(reference)}"


def test_pin_images_refuses_an_image_without_a_registry_digest_and_changes_nothing(
    tmp_path: Path, stub_docker: dict[str, str]
) -> None:
    env_file = tmp_path / ".env"
    example = (ROOT / ".env.example").read_text()
    env_file.write_text(example.replace("REDIS_IMAGE=redis:7-alpine", "REDIS_IMAGE=standin:7"))

    result = pin(env_file, **stub_docker)

    assert result.returncode == 1
    assert "no registry digest for standin:7 (REDIS_IMAGE)" in result.stderr
    assert env_file.read_text() == example.replace(
        "REDIS_IMAGE=redis:7-alpine", "REDIS_IMAGE=standin:7"
    )


def test_the_release_check_names_every_image_not_pinned(
    tmp_path: Path, stub_docker: dict[str, str]
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "".join(
            line + "\n"
            for line in (ROOT / ".env.example").read_text().splitlines()
            if not line.startswith("JAEGER_IMAGE=")  # left out: compose's default, a tag
        )
    )

    unpinned = pin(env_file, "--check")
    refused = pin(env_file, **stub_docker)
    env_file.write_text(env_file.read_text() + "JAEGER_IMAGE=jaegertracing/jaeger:2.11.0\n")
    pinned = pin(env_file, **stub_docker)
    checked = pin(env_file, "--check")

    assert unpinned.returncode == 1
    named = set(unpinned.stderr.split(":")[-1].split())
    assert named == {n for n in read_env_file(ROOT / ".env.example") if n.endswith("_IMAGE")}
    assert refused.returncode == 1
    assert "does not name JAEGER_IMAGE" in refused.stderr
    assert pinned.returncode == 0, pinned.stderr
    assert checked.returncode == 0, checked.stderr


def test_kubernetes_runs_only_the_projects_images_which_an_overlay_pins_by_digest(
    k8s_base, kustomize, tmp_path: Path
) -> None:
    images = {
        container["image"]
        for doc in k8s_base.documents
        if doc["kind"] in ("Deployment", "Job", "StatefulSet")
        for container in doc["spec"]["template"]["spec"]["containers"]
        + doc["spec"]["template"]["spec"].get("initContainers", [])
    }
    assert {image.rsplit(":", 1)[0] for image in images} == {
        f"api-platform/{member}" for member in MEMBERS
    }

    overlay = tmp_path / "production"
    overlay.mkdir()
    pins = {
        f"api-platform/{member}": "sha256:" + hashlib.sha256(member.encode()).hexdigest()
        for member in MEMBERS
    }
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(ROOT / "deploy" / "k8s" / "base", overlay)],
                "images": [
                    {"name": name, "newName": f"registry.example.org/{name}", "digest": digest}
                    for name, digest in pins.items()
                ],
            }
        )
    )
    rendered = kustomize("production", overlay)
    pinned = {
        container["image"]
        for doc in rendered.documents
        if doc["kind"] in ("Deployment", "Job", "StatefulSet")
        for container in doc["spec"]["template"]["spec"]["containers"]
    }

    assert pinned == {f"registry.example.org/{name}@{digest}" for name, digest in pins.items()}
