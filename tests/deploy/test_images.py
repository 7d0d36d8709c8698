"""The Dockerfiles and .dockerignore: linted by hadolint, and built the way the issue asks."""

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
UV_IMAGE = re.compile(r"^--from=ghcr\.io/astral-sh/uv:(\d+\.\d+\.\d+)$")
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


def env_of(stage: list[Instruction]) -> dict[str, str]:
    environment: dict[str, str] = {}
    for instruction in stage:
        if instruction.keyword == "ENV":
            for word in instruction.words():
                name, _, value = word.partition("=")
                environment[name] = value
    return environment


def test_hadolint_finds_nothing_in_any_dockerfile(run_tool, service) -> None:
    result = run_tool("hadolint", "--no-color", "--config", ".hadolint.yaml", service.dockerfile)
    assert result.returncode == 0, f"hadolint {service.dockerfile}:\n{result.stdout}"


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
    final = stages(service.dockerfile)[-1]
    users = [instruction.arguments for instruction in final if instruction.keyword == "USER"]
    assert users, f"{service.member}: the final stage never leaves root"
    user, _, group = users[-1].partition(":")
    # Numeric, so that Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
    assert user.isdigit(), f"{service.member}: USER {users[-1]} should be a numeric uid"
    assert int(user) != 0
    assert not group or int(group) != 0


def test_the_final_stage_checks_health_with_python_on_the_service_port(service) -> None:
    final = stages(service.dockerfile)[-1]
    checks = [instruction for instruction in final if instruction.keyword == "HEALTHCHECK"]
    assert len(checks) == 1, f"{service.member}: one HEALTHCHECK in the final stage"
    command = checks[0].arguments.split("CMD", 1)[1]
    assert "/health" in command
    assert "python" in command, "slim images have no curl: ask with python's urllib"
    assert service.port_variable in command, "the probe follows the port the service uses"


def test_the_image_listens_on_all_interfaces_on_the_service_port_in_production(service) -> None:
    final = stages(service.dockerfile)[-1]
    environment = env_of(final)
    assert environment.get("HOST") == "0.0.0.0"  # noqa: S104 - a container must listen on all
    assert environment.get("APP_ENV") == "production"
    assert environment.get(service.port_variable) == str(service.port)
    exposed = [i.arguments for i in final if i.keyword == "EXPOSE"]
    assert exposed == [str(service.port)]


def test_the_image_sets_only_variables_its_service_reads(service) -> None:
    final = stages(service.dockerfile)[-1]
    unknown = set(env_of(final)) - RUNTIME_VARIABLES - set(service.reads)
    assert not unknown, f"{service.member} reads none of {sorted(unknown)}"


def test_the_image_runs_the_service_package_and_serves_by_default(service) -> None:
    final = stages(service.dockerfile)[-1]
    entrypoint = [i.exec_form() for i in final if i.keyword == "ENTRYPOINT"]
    command = [i.exec_form() for i in final if i.keyword == "CMD"]
    assert entrypoint == [["python", "-m", service.package]]
    assert command == [["serve"]]


def test_the_builder_installs_the_member_from_the_lock_with_a_pinned_uv(service) -> None:
    all_stages = stages(service.dockerfile)
    assert len(all_stages) >= 2, "multi-stage: build tools stay in the builder"
    builder = [i for stage in all_stages[:-1] for i in stage]
    uv_copies = [
        i.words()[0] for i in builder if i.keyword == "COPY" and "astral-sh/uv" in i.arguments
    ]
    assert uv_copies, "uv comes from its image (COPY --from=ghcr.io/astral-sh/uv:<version>)"
    assert all(UV_IMAGE.match(word) for word in uv_copies), f"pin uv exactly: {uv_copies}"
    syncs = [i.words() for i in builder if i.keyword == "RUN" and "uv sync" in i.arguments]
    assert syncs, "the builder runs uv sync"
    final_sync = syncs[-1]
    for flag in ("--frozen", "--no-dev", "--no-editable"):
        assert flag in final_sync, f"{service.member}: uv sync without {flag}"
    assert final_sync[final_sync.index("--package") + 1] == service.member


def test_every_dockerfile_pins_the_same_uv() -> None:
    versions = set()
    for dockerfile in ROOT.glob("*/Dockerfile"):
        versions |= set(re.findall(r"ghcr\.io/astral-sh/uv:([\w.]+)", dockerfile.read_text()))
    assert len(versions) == 1, f"one uv for every image, not {sorted(versions)}"


def test_the_builder_copies_every_workspace_members_pyproject(service) -> None:
    # uv reads the whole workspace to use the lock: a new member needs a line here.
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    copied = {
        i.words()[0]
        for stage in stages(service.dockerfile)[:-1]
        for i in stage
        if i.keyword == "COPY" and not i.arguments.startswith("--")
    }
    expected = {f"{member}/pyproject.toml" for member in members["members"]}
    assert expected | {"pyproject.toml"} <= copied, sorted(expected - copied)


def test_builder_and_runtime_share_one_slim_python_3_11(service) -> None:
    # The venv's interpreter links to the builder's python: the runtime must have the same one.
    text = service.dockerfile.read_text()
    default = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert default, "ARG PYTHON_IMAGE names the one Python image"
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", default[1])
    froms = [stage[0].words()[0] for stage in stages(service.dockerfile)]
    assert froms[-1] == "${PYTHON_IMAGE}"
    assert froms.count("${PYTHON_IMAGE}") == len(froms), "every stage on the same Python"


def test_the_final_stage_installs_nothing_and_copies_only_the_venv(service) -> None:
    final = stages(service.dockerfile)[-1]
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
    all_stages = stages(ROOT / "books-graphql" / "Dockerfile")
    builder_runs = " ".join(i.arguments for i in all_stages[0] if i.keyword == "RUN")
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
        ".git/HEAD",
    ):
        assert is_ignored(path), f"{path} would be sent to the Docker daemon"


def test_dockerignore_keeps_everything_a_dockerfile_copies(service) -> None:
    copied = [
        instruction.words()[0]
        for stage in stages(service.dockerfile)
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
