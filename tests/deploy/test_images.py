"""The Dockerfile and .dockerignore: linted by hadolint, and built the way the issue asks.

One Dockerfile builds every service: shared stages (uv, toolchain, builder, runtime) and one
short final stage per service, named after its workspace member (``--target``); and one
development image, the mail catcher's (``dev-mail``, the ``devservers`` member).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
# Development images: their stage -> the member their venv holds (conftest's DEVELOPMENT_IMAGES).
DEVELOPMENT_STAGES = {"dev-mail": "devservers"}
UV_IMAGE = re.compile(r"^ARG UV_IMAGE=ghcr\.io/astral-sh/uv:(\d+\.\d+\.\d+)$", re.MULTILINE)
DOCKERFILE = ROOT / "Dockerfile"
# What the runtime environment needs that no settings class reads.
RUNTIME_VARIABLES = {"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Instruction:
    keyword: str
    arguments: str

    def words(self) -> list[str]:
        return shlex.split(self.arguments)

    def exec_form(self) -> list[str] | None:
        try:
            parsed = json.loads(self.arguments)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, list) else None


def stages(dockerfile: Path) -> list[list[Instruction]]:
    """The instructions of each build stage (continuations joined, comments dropped)."""
    logical: list[str] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#") and not pending.strip():
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    result: list[list[Instruction]] = []
    for text in filter(str.strip, logical):
        keyword, _, arguments = text.strip().partition(" ")
        instruction = Instruction(keyword.upper(), " ".join(arguments.split()))
        if instruction.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def stage_name(stage: list[Instruction]) -> str:
    words = stage[0].words()
    return words[2] if len(words) == 3 and words[1].upper() == "AS" else ""


def final_stage(member: str) -> list[Instruction]:
    """The instructions of ``--target <member>``: its stage after those it is built FROM."""
    by_name = {stage_name(stage): stage for stage in stages(DOCKERFILE)}
    assert member in by_name, f"the Dockerfile has no stage {member!r} (--target {member})"
    lineage: list[Instruction] = []
    name = member
    while name in by_name:
        lineage = by_name[name] + lineage
        name = by_name[name][0].words()[0]
    return lineage


def builder_stages(member: str) -> list[list[Instruction]]:
    """Every stage but the final ones (the runtime, the services, the development images)."""
    final_names = {stage_name(stage) for stage in stages(DOCKERFILE)} & (
        {"runtime"} | set(MEMBERS) | set(DEVELOPMENT_STAGES)
    )
    return [stage for stage in stages(DOCKERFILE) if stage_name(stage) not in final_names]


def env_of(stage: list[Instruction]) -> dict[str, str]:
    environment: dict[str, str] = {}
    for instruction in stage:
        if instruction.keyword == "ENV":
            for word in instruction.words():
                name, _, value = word.partition("=")
                environment[name] = value
    return environment


def test_hadolint_finds_nothing_in_the_dockerfile(run_tool) -> None:
    result = run_tool("hadolint", "--no-color", "--config", ".hadolint.yaml", DOCKERFILE)
    assert result.returncode == 0, f"hadolint {DOCKERFILE}:\n{result.stdout}"


def test_there_is_one_dockerfile_and_a_final_stage_per_service() -> None:
    assert sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/Dockerfile")) == []
    names = [stage_name(stage) for stage in stages(DOCKERFILE)]
    assert set(MEMBERS) <= set(names)
    for member in MEMBERS:
        # A service's own stage says only what differs: its port, health check, package and
        # labels (its name and version: test_versions.py).
        own = [i.keyword for i in final_stage(member)[len(final_stage("runtime")) :]]
        assert sorted(own) == [
            *("ARG", "CMD", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK", "LABEL")
        ]


def test_no_dockerfile_asks_for_a_frontend_image() -> None:
    # `# syntax=` makes BuildKit fetch docker/dockerfile from Docker Hub: no offline build.
    assert not re.search(r"^#\s*syntax\s*=", DOCKERFILE.read_text(), re.IGNORECASE | re.MULTILINE)


def test_hadolint_fails_a_dockerfile_with_an_unpinned_root_image(run_tool) -> None:
    # The linter is live, and its configuration does not silence everything.
    result = run_tool(
        "hadolint", "--no-color", "--config", ".hadolint.yaml", "-", stdin="FROM python\n"
    )
    assert result.returncode != 0
    assert "DL3006" in result.stdout


def test_every_ignored_hadolint_rule_states_its_reason() -> None:
    config_text = (ROOT / ".hadolint.yaml").read_text()
    ignored = yaml.safe_load(config_text).get("ignored", [])
    for rule in ignored:
        block = config_text.split(f"- {rule}")[0].rsplit("ignored:", 1)[-1]
        reason = [line for line in block.splitlines() if line.strip().startswith("#")]
        assert any(rule in line for line in reason), f"{rule} is ignored without a reason"
        assert sum(len(line) for line in reason) > 80, f"{rule}: say why, not only that"


def test_the_final_stage_runs_as_a_non_root_user(service) -> None:
    final = final_stage(service.member)
    users = [instruction.arguments for instruction in final if instruction.keyword == "USER"]
    assert users, f"{service.member}: the final stage never leaves root"
    user, _, group = users[-1].partition(":")
    # Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
    assert user.isdigit(), f"{service.member}: USER {users[-1]} should be a numeric uid"
    assert int(user) != 0
    assert not group or int(group) != 0


def test_the_final_stage_checks_health_with_python_on_the_service_port(service) -> None:
    final = final_stage(service.member)
    checks = [instruction for instruction in final if instruction.keyword == "HEALTHCHECK"]
    assert len(checks) == 1, f"{service.member}: one HEALTHCHECK in the final stage"
    command = checks[0].arguments.split("CMD", 1)[1]
    assert "/health" in command
    assert "python" in command, "slim images have no curl: ask with python's urllib"
    assert service.port_variable in command, "the probe follows the port the service uses"


def test_the_image_listens_on_all_interfaces_on_the_service_port_in_production(service) -> None:
    final = final_stage(service.member)
    environment = env_of(final)
    assert environment.get("HOST") == "0.0.0.0"  # noqa: S104 - a container must listen on all
    assert environment.get("APP_ENV") == "production"
    assert environment.get(service.port_variable) == str(service.port)
    exposed = [i.arguments for i in final if i.keyword == "EXPOSE"]
    ports = [service.port, *(port for _, port in service.other_processes)]
    assert exposed == [" ".join(map(str, ports))]


def test_the_image_sets_only_variables_its_service_reads(service) -> None:
    final = final_stage(service.member)
    unknown = set(env_of(final)) - RUNTIME_VARIABLES - set(service.reads)
    assert not unknown, f"{service.member} reads none of {sorted(unknown)}"


def test_the_image_runs_the_service_package_and_serves_by_default(service) -> None:
    final = final_stage(service.member)
    entrypoint = [i.exec_form() for i in final if i.keyword == "ENTRYPOINT"]
    command = [i.exec_form() for i in final if i.keyword == "CMD"]
    assert entrypoint == [["python", "-m", service.package]]
    assert command == [["serve"]]


def test_the_builder_installs_the_member_from_the_lock_with_a_pinned_uv() -> None:
    assert UV_IMAGE.search(DOCKERFILE.read_text()), "ARG UV_IMAGE=ghcr.io/astral-sh/uv:<x.y.z>"
    builder = [i for stage in builder_stages("any") for i in stage]
    assert ["FROM", "${UV_IMAGE} AS uv"] in [[i.keyword, i.arguments] for i in builder]
    uv_copies = [i.words() for i in builder if i.keyword == "COPY" and "/uv " in i.arguments]
    assert uv_copies == [["--from=uv", "/uv", "/bin/uv"]]
    syncs = [i.words() for i in builder if i.keyword == "RUN" and "uv sync" in i.arguments]
    assert syncs, "the builder runs uv sync"
    final_sync = syncs[-1]
    for flag in ("--frozen", "--no-dev", "--no-editable"):
        assert flag in final_sync, f"uv sync without {flag}"
    assert final_sync[final_sync.index("--package") + 1] == "${MEMBER}"


def test_compose_builds_each_service_with_its_own_stage_and_member(compose) -> None:
    for name, service in compose.app_services().items():
        build = compose.services[name].get("build")
        if build is None:
            continue
        assert build["dockerfile"] == "Dockerfile"
        assert build["target"] == service.member == build["args"]["MEMBER"], name


def test_the_builder_copies_every_workspace_members_pyproject() -> None:
    # uv reads the whole workspace to use the lock: a new member needs a line here.
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    copied = {
        i.words()[0]
        for stage in builder_stages("any")
        for i in stage
        if i.keyword == "COPY" and not i.arguments.startswith("--")
    }
    expected = {f"{member}/pyproject.toml" for member in members["members"]}
    assert expected | {"pyproject.toml"} <= copied, sorted(expected - copied)
    libraries = {"shared", "testkit", *DEVELOPMENT_STAGES.values()}
    assert set(members["members"]) - libraries == set(MEMBERS)


def test_the_mail_catchers_development_image_runs_it_like_a_service_on_its_own_member(
    compose,
) -> None:
    final = final_stage("dev-mail")
    own = final[len(final_stage("runtime")) :]
    # From the runtime stage: the services' non-root user, their venv's place, nothing else.
    assert own[0].arguments == "runtime AS dev-mail"
    assert [i.arguments for i in final if i.keyword == "USER"] == ["10001:10001"]
    assert not [i for i in own if i.keyword in ("RUN", "COPY", "ADD", "USER")]
    assert [i.exec_form() for i in own if i.keyword == "ENTRYPOINT"] == [
        ["python", "-m", "api_devservers.mail_catcher"]
    ]
    assert [i.exec_form() for i in own if i.keyword == "CMD"] == [["serve"]]
    assert env_of(own)["MAIL_CATCHER_HOST"] == "0.0.0.0"  # noqa: S104 - a container listens on all
    assert [i.arguments for i in own if i.keyword == "EXPOSE"] == ["1025 8025"]
    (check,) = [i.arguments for i in own if i.keyword == "HEALTHCHECK"]
    assert "127.0.0.1:8025/health" in check

    mail = compose.services["mail"]
    assert mail["build"]["dockerfile"] == "Dockerfile"
    assert mail["build"]["target"] == "dev-mail"
    assert mail["build"]["args"]["MEMBER"] == DEVELOPMENT_STAGES["dev-mail"]
    assert mail["image"] == "${IMAGE_REGISTRY:-api-platform}/dev-mail:${IMAGE_TAG:-dev}"
    assert "entrypoint" not in mail


def test_builder_and_runtime_share_one_slim_python_3_11() -> None:
    # The venv's interpreter links to the builder's python: the runtime must have the same one.
    text = DOCKERFILE.read_text()
    default = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert default, "ARG PYTHON_IMAGE names the one Python image"
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", default[1])
    roots = {
        stage[0].words()[0]
        for stage in stages(DOCKERFILE)
        if not stage[0].words()[0].startswith(("toolchain", "runtime", "${UV_IMAGE}"))
    }
    assert roots == {"${PYTHON_IMAGE}"}, "every Python stage on the same Python"


def test_the_final_stage_installs_nothing_and_copies_only_the_venv(service) -> None:
    final = final_stage(service.member)
    for instruction in final:
        if instruction.keyword == "RUN":
            assert not re.search(
                r"apt-get install|apk add|pip install|\buv\b|gcc|g\+\+|cmake", instruction.arguments
            ), f"{service.member}: build tools in the final stage: {instruction.arguments}"
        if instruction.keyword in ("COPY", "ADD"):
            assert instruction.words()[:3] == ["--from=builder", "/app/.venv", "/app/.venv"], (
                f"{service.member}: the final stage takes only the venv: {instruction.arguments}"
            )


def test_tartiflettes_compilers_stay_in_the_books_builder() -> None:
    (toolchain,) = [s for s in stages(DOCKERFILE) if stage_name(s) == "toolchain-books-graphql"]
    builder_runs = " ".join(i.arguments for i in toolchain if i.keyword == "RUN")
    for tool in ("cmake", "g++", "flex", "bison"):
        assert tool in builder_runs


# --- .dockerignore ------------------------------------------------------------------------


def _dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """(negated, pattern) per line; Docker's matching: ``**`` any folders, ``*`` one name."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = ""
        for part in re.split(r"(\*\*/?|\*|\?)", pattern):
            if part.startswith("**"):
                regex += "(?:.*/)?" if part.endswith("/") else ".*"
            elif part == "*":
                regex += "[^/]*"
            elif part == "?":
                regex += "[^/]"
            else:
                regex += re.escape(part)
        rules.append((negated, re.compile(regex)))
    return rules


def is_ignored(path: str) -> bool:
    """Whether Docker leaves ``path`` (or a folder above it) out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    ignored = False
    for negated, regex in _dockerignore_rules():
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negated
    return ignored


def test_dockerignore_keeps_local_state_caches_tests_and_secrets_out_of_images() -> None:
    for path in (
        "var/users.sqlite3",
        "var/dev-signing-key.pem",
        ".venv/bin/python",
        "shared/src/api_shared/__pycache__/errors.cpython-311.pyc",
        ".pytest_cache/v/cache/lastfailed",
        ".mypy_cache/3.11/x.json",
        ".ruff_cache/0.8.0/x",
        ".cache/deploy-tools/bin/hadolint",
        "tests/e2e/test_orders.py",
        "users-service/tests/unit/test_passwords.py",
        ".env",
        "deploy/secrets/jwt_private_key.pem",
        "deploy/secrets/nats/users-service.nk",
        "var/nats-keys/orders-service.nk",
        "deploy/secrets/webhook_secrets.key",
        "var/webhook-secrets.key",
        ".git/HEAD",
    ):
        assert is_ignored(path), f"{path} would be sent to the Docker daemon"


def test_dockerignore_keeps_everything_a_dockerfile_copies(service) -> None:
    copied = [
        instruction.words()[0].replace("${MEMBER}", service.member)
        for stage in stages(DOCKERFILE)
        for instruction in stage
        if instruction.keyword == "COPY" and not instruction.arguments.startswith("--from")
    ]
    files: list[Any] = []
    for source in copied:
        path = ROOT / source
        assert path.exists(), f"{service.member} copies {source}, which does not exist"
        files += [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    kept = [
        relative
        for relative in (p.relative_to(ROOT).as_posix() for p in files)
        if "__pycache__" not in relative and "/tests/" not in relative
    ]
    assert any(path.endswith("/settings.py") for path in kept)
    lost = [path for path in kept if is_ignored(path)]
    assert not lost, f"{service.member} needs these, .dockerignore drops them: {lost}"
