"""Each service's version reaches its image label (docs/releasing.md): the Dockerfile labels
each service's stage, compose passes each service's variable, and deploy/service-versions.sh
writes those variables from the pyproject.toml files, the one source."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
DEVELOPMENT_MEMBER = "devservers"  # the mail catcher's image: no release, no version label


def _variable(member: str) -> str:
    return member.upper().replace("-", "_") + "_VERSION"


def _pyproject_version(member: str) -> str:
    text = (ROOT / member / "pyproject.toml").read_text(encoding="utf-8")
    version: str = tomllib.loads(text)["project"]["version"]
    return version


@pytest.mark.parametrize("member", MEMBERS)
def test_each_services_stage_is_labelled_with_its_name_and_version(member: str) -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    stage = dockerfile.split(f"FROM runtime AS {member}\n", 1)[1].split("\nFROM ", 1)[0]

    assert 'ARG SERVICE_VERSION=""' in stage
    assert re.search(
        rf'LABEL org\.opencontainers\.image\.title="{member}" \\\n\s+'
        r'org\.opencontainers\.image\.version="\$\{SERVICE_VERSION:-unversioned\}"',
        stage,
    ), stage


def test_compose_passes_each_services_version_variable_to_its_build() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    built = {
        service["build"]["args"]["MEMBER"]: service["build"]["args"]
        for service in compose["services"].values()
        if "build" in service and service["build"]["args"]["MEMBER"] != DEVELOPMENT_MEMBER
    }

    assert set(built) == set(MEMBERS)
    for member, args in built.items():
        assert args["SERVICE_VERSION"] == f"${{{_variable(member)}:-}}"


def test_service_versions_writes_each_pyproject_version_and_env_example_names_them() -> None:
    written = subprocess.run(
        ["bash", str(ROOT / "deploy/service-versions.sh")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    example = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()

    assert written == [f"{_variable(m)}={_pyproject_version(m)}" for m in MEMBERS]
    for member in MEMBERS:
        assert f"{_variable(member)}=" in example
