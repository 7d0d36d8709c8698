"""The test kit (api_testkit) is a development dependency only, and the one home of test
support: no service's runtime needs it, no production package carries test helpers, and no
test module borrows from another. And a rule of the service shape that only a reading of
the code can check: an app keeps its state in two typed slots. And its free ports are each
handed out once. The development servers (``devservers``: the mail catcher, the nats-server
runner) are a development dependency too: no service's locked dependencies reach them or the
SMTP server only the catcher needs (the images are checked in tests/compose)."""

from __future__ import annotations

import ast
import subprocess
import tomllib
from pathlib import Path

from api_testkit.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TEST_KIT = "api-testkit"
DEV_SERVERS = "devservers"
SMTP_SERVER = "aiosmtpd"


def _runtime_members() -> dict[str, Path]:
    """Every workspace member but the test kit, by project name, with its folder: read from
    the workspace, so that a new service is held to these rules without anyone listing it."""
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    members = {}
    for folder in workspace["members"]:
        name = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]["name"]
        if name != TEST_KIT:
            members[name] = ROOT / folder
    return members


RUNTIME_MEMBERS = _runtime_members()


def _production_sources() -> dict[str, Path]:
    """Each runtime member's import package, by name (``src/<package>``)."""
    sources = {}
    for folder in RUNTIME_MEMBERS.values():
        (package,) = [p for p in (folder / "src").iterdir() if (p / "__init__.py").exists()]
        sources[package.name] = package
    return sources


PRODUCTION_SOURCES = _production_sources()


def test_every_member_is_held_to_the_rules() -> None:
    # The lists above are read, not written: they must see every service there is.
    assert {"api-shared", "gateway", "users-service", "orders-service"} <= set(RUNTIME_MEMBERS)
    assert {"books-graphql", "webhooks-service"} <= set(RUNTIME_MEMBERS)
    assert "webhooks_service" in PRODUCTION_SOURCES


def runtime_closure(package: str) -> set[str]:
    """Every package ``uv sync --no-dev --package <package>`` installs, from uv.lock."""
    locked = {p["name"]: p for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    wanted: list[tuple[str, tuple[str, ...]]] = [(package, ())]
    while wanted:
        name, extras = wanted.pop()
        seen.add((name, extras))
        entry = locked[name]
        requirements = list(entry.get("dependencies", []))  # never "dev-dependencies"
        for extra in extras:
            requirements += entry.get("optional-dependencies", {}).get(extra, [])
        for requirement in requirements:
            needed = (requirement["name"], tuple(requirement.get("extra", ())))
            if needed not in seen:
                wanted.append(needed)
    return {name for name, _ in seen}


def test_no_service_needs_the_test_kit_at_run_time() -> None:
    assert {"sanic", "asyncpg", "pyjwt"} <= runtime_closure("api-shared")  # the walk works
    for member in (*RUNTIME_MEMBERS, "api-platform"):
        assert TEST_KIT not in runtime_closure(member), f"{member} would install the test kit"


def test_no_service_reaches_the_development_servers_or_their_smtp_server() -> None:
    # The walk finds what is there: the development servers do need the SMTP server.
    assert {SMTP_SERVER, "api-shared", "aiohttp"} <= runtime_closure(DEV_SERVERS)
    for member in RUNTIME_MEMBERS:
        if member == DEV_SERVERS:
            continue
        closure = runtime_closure(member)
        assert SMTP_SERVER not in closure, f"{member} would install {SMTP_SERVER}"
        assert DEV_SERVERS not in closure, f"{member} would install the development servers"


def test_the_development_servers_are_a_development_dependency_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert DEV_SERVERS in project["dependency-groups"]["dev"]
    assert DEV_SERVERS not in project["project"]["dependencies"]
    shared = tomllib.loads((ROOT / "shared" / "pyproject.toml").read_text())["project"]
    assert not [d for d in shared["dependencies"] if d.startswith(SMTP_SERVER)]


def test_the_test_kit_is_in_the_dev_group_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert TEST_KIT in project["dependency-groups"]["dev"]
    assert TEST_KIT not in project["project"]["dependencies"]
    for folder in RUNTIME_MEMBERS.values():
        member_project = tomllib.loads((folder / "pyproject.toml").read_text())
        assert not [d for d in member_project["project"]["dependencies"] if "testkit" in d]


def test_images_take_the_test_kits_pyproject_and_never_its_code() -> None:
    # uv needs every member's pyproject.toml to read the lock; nothing else of the kit.
    copied = [
        line.split()[1]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ") and not line.startswith("COPY --from")
    ]
    assert [source for source in copied if source.startswith("testkit")] == [
        "testkit/pyproject.toml"
    ]
    assert "testkit/src" in (ROOT / ".dockerignore").read_text().splitlines()


def test_production_packages_hold_no_test_helpers_and_never_import_the_test_kit() -> None:
    for package, source in PRODUCTION_SOURCES.items():
        assert not (source / "testing.py").exists(), f"{package}.testing ships in the image"
        assert not (source / "testing").exists(), f"{package}.testing ships in the image"
        for path in source.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                modules = _imported_modules(node)
                assert not [m for m in modules if m.split(".")[0] == "api_testkit"], path


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = "." * node.level + (node.module or "")
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return []


def _tracked(pattern: str) -> list[str]:
    """The repository's files matching ``pattern``, new ones included (not the ignored)."""
    return subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", pattern],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def _test_modules() -> list[Path]:
    return [ROOT / path for path in _tracked("*test_*.py") if Path(path).name.startswith("test_")]


def test_no_test_module_imports_another_test_module() -> None:
    modules = _test_modules()
    assert len(modules) > 50  # every suite's, not none
    borrowing = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for module in _imported_modules(node):
                if any(part.startswith("test_") for part in module.split(".")):
                    borrowing.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {module}")
    assert not borrowing, "move what they share into api_testkit or a conftest:\n" + "\n".join(
        borrowing
    )


UPSTREAM_FAKES = "api_testkit.upstream_fakes"


def test_fakes_of_neighbours_serve_unit_tests_only() -> None:
    # Integration and end-to-end tests talk to the real services (api_testkit.neighbours).
    importers = [
        path
        for path in _tracked("*.py")
        for node in ast.walk(ast.parse((ROOT / path).read_text()))
        if any(module.startswith(UPSTREAM_FAKES) for module in _imported_modules(node))
    ]
    assert importers  # the walk finds the unit tests that use them
    assert [path for path in importers if "/tests/unit/" not in path] == []


APP_SLOTS = frozenset({"frame", "context"})  # api_shared.frame.frame_of, each context_of


def test_an_app_keeps_its_state_in_the_frame_and_the_context_alone() -> None:
    # ``<app>.ctx.<slot>``: the frame's parts (api_shared.frame) and the service's context,
    # each typed and read through its accessor; per-request state (request.ctx) is apart.
    loose = []
    for source in PRODUCTION_SOURCES.values():
        for path in source.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "ctx"
                    and not (
                        isinstance(node.value.value, ast.Name) and node.value.value.id == "request"
                    )
                    and node.attr not in APP_SLOTS
                ):
                    loose.append(f"{path.relative_to(ROOT)}:{node.lineno} .ctx.{node.attr}")
    assert not loose, "keep it in the Frame or the service's Context:\n" + "\n".join(loose)


def test_free_port_never_hands_out_a_port_twice_though_none_was_bound() -> None:
    # A stack draws a dozen ports before its first process binds one: drawn from ~18,000,
    # 300 unbound draws would repeat one nine times in ten if nothing prevented it.
    ports = [free_port() for _ in range(300)]

    assert len(set(ports)) == len(ports)
