"""Fixtures of the deployment checks: the repository's deployment files, parsed.

Everything is checked statically (no Docker engine, no cluster). The checkers come from PyPI
through ``deploy/check-tools.sh``; one that cannot be installed fails the run, never skips.
Test modules get everything through fixtures (this folder is not a package).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices, AliasPath
from pydantic_settings import BaseSettings

from api_shared.tracing import TracingSettings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
TOOLS = (
    "hadolint",
    "check-jsonschema",
    "kubectl",
    "kubernetes-validate",
    "shellcheck",
    "docker-compose",
)

# Secrets that .env.example leaves blank on purpose (deploy/init-secrets.sh fills them in);
# the checks stand in these values, which the services' production settings must accept.
BLANK_SECRET_STAND_INS = {
    "POSTGRES_PASSWORD": "0123456789abcdef0123456789abcdef",
    "USERS_DB_PASSWORD": "1123456789abcdef0123456789abcdef",
    "ORDERS_DB_PASSWORD": "2123456789abcdef0123456789abcdef",
    "BOOKS_DB_PASSWORD": "3123456789abcdef0123456789abcdef",
    "WEBHOOKS_DB_PASSWORD": "6123456789abcdef0123456789abcdef",
    "REDIS_PASSWORD": "5123456789abcdef0123456789abcdef",
}
# The NATS users' public NKeys, which .env.example leaves blank too (init-secrets.sh writes
# each from the seed it makes); not secret, but required.
BLANK_PUBLIC_KEY_STAND_INS = {
    "NATS_USERS_SERVICE_NKEY": "UBGFPHRVTH7TIIXRRBVCMZJFABNI65MT2O3NQGTQAWC4RZYH2BHUZKBT",
    "NATS_ORDERS_SERVICE_NKEY": "UBT3NR6OJ5OB3HJRIATCCUGRZCSNXDSPCSNUBUHQZ3TSQT2PXT3LU6PF",
    "NATS_WEBHOOKS_DISPATCHER_NKEY": "UCD7V6NID2662MPTSLKGKM3BV5T2RLBATXJCXWV24KMA67RJ6GYLYRVX",
}


@dataclass(frozen=True)
class Service:
    """A deployable workspace member: its folder, import package and listening port."""

    member: str
    package: str
    port_variable: str
    port: int
    database_variable: str | None
    # Other processes of the image: command -> the port of its probes (webhooks' dispatcher).
    other_processes: tuple[tuple[str, int], ...] = ()

    def port_of(self, command: list[str] | None) -> int:
        """The port the process ``command`` runs (the image's default: ``serve``) listens on."""
        return dict(self.other_processes).get((command or ["serve"])[0], self.port)

    @property
    def has_database(self) -> bool:
        return self.database_variable is not None

    @property
    def dockerfile(self) -> Path:
        return ROOT / "Dockerfile"

    @property
    def source(self) -> Path:
        return ROOT / self.member / "src" / self.package

    @cached_property
    def settings_classes(self) -> list[type[BaseSettings]]:
        """The settings classes through which the service reads its environment.

        Its ``settings.Settings``, the tracing settings every process reads, and every
        BaseSettings subclass its code instantiates by an imported name (orders-service
        builds ``TokenSettings()`` itself, for example).
        """
        main = importlib.import_module(f"{self.package}.settings").Settings
        found = {f"{main.__module__}.{main.__qualname__}": main}
        # Every process's runner reads the OTEL_* variables (api_shared.runner).
        found[f"{TracingSettings.__module__}.{TracingSettings.__qualname__}"] = TracingSettings
        for path in sorted(self.source.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            imported = {
                alias.asname or alias.name: (node.module, alias.name)
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                for alias in node.names
            }
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                if node.func.id not in imported:
                    continue
                module, name = imported[node.func.id]
                if module.partition(".")[0] not in FIRST_PARTY:
                    continue
                with warnings.catch_warnings():
                    # Importing a module for a look must not fail on its dependencies' warnings.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    candidate = getattr(importlib.import_module(module), name, None)
                if inspect.isclass(candidate) and issubclass(candidate, BaseSettings):
                    found[f"{candidate.__module__}.{candidate.__qualname__}"] = candidate
        return list(found.values())

    @cached_property
    def reads(self) -> dict[str, bool]:
        """Every variable the service reads -> whether it is required (has no default)."""
        reads: dict[str, bool] = {}
        for settings in self.settings_classes:
            for name, required in environment_names(settings).items():
                reads[name] = reads.get(name, False) or required
        return reads


SERVICES = (
    Service("gateway", "gateway", "GATEWAY_PORT", 8000, None),
    Service("users-service", "users_service", "USERS_PORT", 8001, "USERS_DATABASE_URL"),
    Service("orders-service", "orders_service", "ORDERS_PORT", 8002, "ORDERS_DATABASE_URL"),
    Service("books-graphql", "books_graphql", "BOOKS_PORT", 4000, "BOOKS_DATABASE_URL"),
    Service(
        "webhooks-service",
        "webhooks_service",
        "WEBHOOKS_PORT",
        8003,
        "WEBHOOKS_DATABASE_URL",
        other_processes=(("dispatch", 8004),),
    ),
)
SERVICES_BY_MEMBER = {service.member: service for service in SERVICES}
# The development images the Dockerfile builds beside the services' (their stage -> the
# workspace member their venv holds): compose runs them, no service is built from them.
DEVELOPMENT_IMAGES = {"dev-mail": "devservers"}
FIRST_PARTY = {"api_shared"} | {service.package for service in SERVICES}


def environment_names(settings: type[BaseSettings]) -> dict[str, bool]:
    """Variable name -> required, for every field of a settings class, inherited ones too.

    A field is read from its ``validation_alias`` (each choice of an AliasChoices), else from
    ``env_prefix`` + its name, as pydantic-settings does.
    """
    prefix = settings.model_config.get("env_prefix", "")
    names: dict[str, bool] = {}
    for field_name, field in settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, str):
            choices = [alias]
        elif isinstance(alias, AliasChoices):
            choices = [c if isinstance(c, str) else str(c.path[0]) for c in alias.choices]
        elif isinstance(alias, AliasPath):
            choices = [str(alias.path[0])]
        else:
            choices = [f"{prefix}{field_name}".upper()]
        for choice in choices:
            names[choice] = field.is_required()
    return names


# --- checkers --------------------------------------------------------------------------

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def tool_bin() -> Path:
    """The bin/ folder of the checkers; deploy/check-tools.sh installs them when missing."""
    env = dict(os.environ)
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if Path(uv).exists():
        env["UV"] = uv
    result = subprocess.run(
        ["bash", str(DEPLOY / "check-tools.sh")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(
            "deploy/check-tools.sh could not install the deployment checkers "
            f"({', '.join(TOOLS)}); they are required, not optional:\n{result.stderr}"
        )
    bin_dir = Path(result.stdout.strip().splitlines()[-1]) / "bin"
    missing = [tool for tool in TOOLS if not (bin_dir / tool).exists()]
    if missing:
        pytest.fail(f"checkers missing from {bin_dir}: {', '.join(missing)}")
    return bin_dir


@pytest.fixture(scope="session")
def run_tool(tool_bin: Path) -> Run:
    """Run one checker from the repository root: ``run_tool("hadolint", path)``."""

    def run(tool: str, *args: str | Path, stdin: str | None = None) -> Any:
        return subprocess.run(
            [str(tool_bin / tool), *map(str, args)],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
            timeout=120,
        )

    return run


# --- docker-compose.yml and .env.example -------------------------------------------------

# A default may itself interpolate, one level deep: ${USERS_IMAGE_TAG:-${IMAGE_TAG:-dev}}.
_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:(?P<operator>:?[-?+])(?P<argument>(?:\$\{[^{}]*\}|[^}])*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines, as Compose reads an .env file (this project quotes nothing)."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, separator, value = line.partition("=")
            assert separator, f"{path.name}: not KEY=value: {line!r}"
            values[name.strip()] = value
    return values


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """Compose's interpolation of one string: ``${X}``, ``${X:-default}``, ``${X:?error}``…"""

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["bare"]
        operator = match["operator"]
        argument = interpolate(match["argument"] or "", variables)
        current = variables.get(name, "")
        missing = name not in variables or (bool(operator) and operator[0] == ":" and not current)
        if operator in ("-", ":-"):
            return argument if missing else current
        if operator in ("?", ":?"):
            if missing:
                raise ValueError(f"${{{name}}} is required: {argument}")
            return current
        if operator in ("+", ":+"):
            return "" if missing else argument
        return current

    return _INTERPOLATION.sub(substitute, value)


def _names_in(text: str) -> set[str]:
    """The variables ``text`` interpolates, those in defaults included."""
    names: set[str] = set()
    for match in _INTERPOLATION.finditer(text):
        if not match["escaped"]:
            names.add(match["braced"] or match["bare"])
            names |= _names_in(match["argument"] or "")
    return names


class ComposeFile:
    """docker-compose.yml: the raw text (for interpolation) and the parsed document."""

    path = ROOT / "docker-compose.yml"

    def __init__(self) -> None:
        self.text = self.path.read_text()
        self.data: dict[str, Any] = yaml.safe_load(self.text)
        self.services: dict[str, dict[str, Any]] = self.data["services"]

    def interpolated_names(self) -> set[str]:
        """Every variable the file interpolates (``$$`` is an escaped dollar, not one)."""
        return _names_in(self.text)

    def app_services(self) -> dict[str, Service]:
        """Compose services running a service's image as that service: those that build it,
        and the one-shots that run the image another service builds."""
        found: dict[str, Service] = {}
        built: dict[str, Service] = {}
        for name, definition in self.services.items():
            build = definition.get("build")
            if build is None or build["target"] in DEVELOPMENT_IMAGES:
                continue  # not built here, or a development image (the mail catcher's)
            member = build["target"]
            assert member in SERVICES_BY_MEMBER, f"{name} builds unknown member {member}"
            found[name] = built[definition["image"]] = SERVICES_BY_MEMBER[member]
        for name, definition in self.services.items():
            # An entrypoint of its own runs another program from the image (NATS).
            if "entrypoint" in definition:
                continue
            if "build" not in definition and definition.get("image") in built:
                found[name] = built[definition["image"]]
        return found

    def is_one_shot(self, name: str) -> bool:
        """A migration run: the service's image with ``migrate`` as its command."""
        return self.services[name].get("command") == ["migrate"]

    @staticmethod
    def interpolate(value: str, variables: Mapping[str, str]) -> str:
        """One value of the file after interpolation with ``variables`` (an .env)."""
        return interpolate(value, variables)

    def environment(self, name: str, variables: Mapping[str, str]) -> dict[str, str]:
        """A service's environment after interpolation with ``variables`` (an .env)."""
        raw = self.services[name].get("environment") or {}
        if isinstance(raw, list):
            raw = dict(item.partition("=")[::2] for item in raw)
        return {key: interpolate(str(value), variables) for key, value in raw.items()}


@pytest.fixture(scope="session")
def compose() -> ComposeFile:
    return ComposeFile()


@pytest.fixture(scope="session")
def compose_config(tool_bin: Path) -> Callable[..., dict[str, Any]]:
    """What Compose itself makes of docker-compose.yml (``config``: no engine, no image),
    with an env file and options: ``compose_config(env_file, "--profile", "x")``."""

    def config(env_file: Path, *options: str | Path) -> dict[str, Any]:
        environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(env_file.parent)}
        result = subprocess.run(
            [
                str(tool_bin / "docker-compose"),
                "--project-directory",
                str(ROOT),
                "--env-file",
                str(env_file),
                *map(str, options),
                "config",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=environment,  # nothing of the caller's environment interpolated
            check=False,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        model: dict[str, Any] = json.loads(result.stdout)
        return model

    return config


@pytest.fixture(scope="session")
def swarm_overlay_names() -> set[str]:
    """The variables deploy/swarm/stack.compose.yml interpolates (read with .env too)."""
    return _names_in((DEPLOY / "swarm" / "stack.compose.yml").read_text())


@pytest.fixture(scope="session")
def env_example() -> dict[str, str]:
    return read_env_file(ROOT / ".env.example")


@pytest.fixture(scope="session")
def blank_secrets() -> dict[str, str]:
    """The secrets .env.example leaves blank -> the stand-in values the checks use."""
    return dict(BLANK_SECRET_STAND_INS)


@pytest.fixture(scope="session")
def blank_public_keys() -> dict[str, str]:
    """The NATS users' public keys .env.example leaves blank -> valid stand-ins."""
    return dict(BLANK_PUBLIC_KEY_STAND_INS)


@pytest.fixture(scope="session")
def filled_env(env_example: dict[str, str]) -> dict[str, str]:
    """.env.example with its blanks filled in, as deploy/init-secrets.sh does."""
    filled = dict(env_example)
    for name, value in (BLANK_SECRET_STAND_INS | BLANK_PUBLIC_KEY_STAND_INS).items():
        assert filled.get(name) == "", f".env.example should leave {name} blank"
        filled[name] = value
    return filled


# --- Kubernetes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    service: Service
    kind: str
    name: str
    pod: dict[str, Any]


class Manifests:
    """The rendered output of one kustomization (``kubectl kustomize``)."""

    def __init__(self, name: str, directory: Path, documents: list[dict[str, Any]]) -> None:
        self.name = name
        self.directory = directory
        self.documents = documents

    def of_kind(self, kind: str) -> dict[str, dict[str, Any]]:
        return {doc["metadata"]["name"]: doc for doc in self.documents if doc["kind"] == kind}

    def workloads(self) -> Iterator[Workload]:
        """Every Deployment and Job that runs a workspace member's image."""
        for doc in self.documents:
            member = doc["metadata"].get("labels", {}).get("app.kubernetes.io/name")
            if doc["kind"] in ("Deployment", "Job") and member in SERVICES_BY_MEMBER:
                pod = doc["spec"]["template"]["spec"]
                yield Workload(
                    SERVICES_BY_MEMBER[member], doc["kind"], doc["metadata"]["name"], pod
                )

    def environment(self, container: Mapping[str, Any]) -> dict[str, tuple[str, str | None]]:
        """Every variable a container gets: name -> (where from, literal value or None)."""
        config_maps = self.of_kind("ConfigMap")
        environment: dict[str, tuple[str, str | None]] = {}
        for source in container.get("envFrom", []):
            assert "configMapRef" in source, (
                "envFrom only from ConfigMaps: name a Secret's keys one by one under env, so "
                "that the variables a container gets are known without a cluster"
            )
            name = source["configMapRef"]["name"]
            assert name in config_maps, f"envFrom names a ConfigMap not in the output: {name}"
            for key, value in config_maps[name].get("data", {}).items():
                environment[key] = (f"configmap/{name}", value)
        for variable in container.get("env", []):
            if "value" in variable:
                environment[variable["name"]] = ("value", variable["value"])
            elif "fieldRef" in variable["valueFrom"]:  # the pod's own (its name...)
                field = variable["valueFrom"]["fieldRef"]["fieldPath"]
                environment[variable["name"]] = (f"field/{field}", None)
            else:
                ref = variable["valueFrom"]["secretKeyRef"]
                environment[variable["name"]] = (f"secret/{ref['name']}/{ref['key']}", None)
        return environment


def _kustomize(tool_bin: Path, name: str, directory: Path) -> Manifests:
    result = subprocess.run(
        [str(tool_bin / "kubectl"), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, f"kubectl kustomize {directory} failed:\n{result.stderr}"
    return Manifests(name, directory, [doc for doc in yaml.safe_load_all(result.stdout) if doc])


@pytest.fixture(scope="session")
def kustomize(tool_bin: Path) -> Callable[[str, Path], Manifests]:
    """``kustomize(name, directory)``: render a kustomization of the test's own."""
    return lambda name, directory: _kustomize(tool_bin, name, directory)


@pytest.fixture(scope="session")
def k8s_base(tool_bin: Path) -> Manifests:
    return _kustomize(tool_bin, "base", DEPLOY / "k8s" / "base")


@pytest.fixture(scope="session")
def k8s_dev(tool_bin: Path) -> Manifests:
    return _kustomize(tool_bin, "dev", DEPLOY / "k8s" / "overlays" / "dev")


@pytest.fixture(params=["base", "dev"])
def k8s(request: pytest.FixtureRequest) -> Manifests:
    """Each rendered kustomization in turn: the base and the dev overlay."""
    manifests: Manifests = request.getfixturevalue(f"k8s_{request.param}")
    return manifests


@pytest.fixture(params=SERVICES, ids=[service.member for service in SERVICES])
def service(request: pytest.FixtureRequest) -> Service:
    """Each deployable member in turn."""
    chosen: Service = request.param
    return chosen


@pytest.fixture(scope="session")
def services() -> tuple[Service, ...]:
    return SERVICES
