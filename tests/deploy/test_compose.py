"""docker-compose.yml: valid Compose, scalable, healthy-before-dependents, secrets from .env."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
INIT_SCRIPT = ROOT / "deploy" / "postgres" / "init.sh"
PUBLISHED = {"gateway": 8000, "books-graphql": 4000, "mail": 8025}
OBSERVABILITY_PUBLISHED = {"prometheus": 9090, "grafana": 3000, "jaeger": 16686}
# The services the app services reach that are not app services themselves (the mail
# catcher's SMTP port included).
DATASTORE_PORTS = {"postgres": 5432, "redis": 6379, "nats": 4222, "mail": 1025}
# URLs that name an address outside the compose network (the front end mails link to).
PUBLIC_URLS = frozenset({"FRONTEND_URL"})


def test_compose_file_is_valid_against_the_compose_specification(run_tool) -> None:
    result = run_tool(
        "check-jsonschema", "--builtin-schema", "vendor.compose-spec", "docker-compose.yml"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_schema_check_rejects_a_misspelt_key(run_tool, tmp_path) -> None:
    broken = tmp_path / "compose.yml"
    broken.write_text("services:\n  web:\n    image: nginx\n    helthcheck: {}\n")
    result = run_tool("check-jsonschema", "--builtin-schema", "vendor.compose-spec", broken)
    assert result.returncode != 0


def test_only_the_gateway_the_books_sandbox_and_the_mail_catcher_publish_ports(compose) -> None:
    # Of the default services; the observability profile's UIs are published alike.
    publishing = {
        name
        for name, svc in compose.services.items()
        if svc.get("ports") and not svc.get("profiles")
    }
    assert publishing == set(PUBLISHED)
    for name, port in {**PUBLISHED, **OBSERVABILITY_PUBLISHED}.items():
        (mapping,) = compose.services[name]["ports"]
        # On this machine only, unless PUBLISH_ADDRESS says otherwise: a developer's laptop
        # does not offer the API (or the unlimited sandbox) to its whole network.
        assert str(mapping).startswith("${PUBLISH_ADDRESS:-127.0.0.1}:"), mapping
        assert str(mapping).endswith(f":{port}"), f"{name} publishes {mapping}"


def test_images_built_here_are_never_pulled_from_a_registry(compose) -> None:
    # With build + image, Compose would first try to pull the name: a registry's image of
    # that name would run instead of this checkout's code.
    for name, definition in compose.services.items():
        if "build" in definition:
            assert definition.get("pull_policy") == "build", name


def test_no_service_has_a_fixed_container_name(compose) -> None:
    # A fixed name (or host port) would make `docker compose up --scale X=2` fail.
    named = [name for name, svc in compose.services.items() if "container_name" in svc]
    assert not named


def test_every_long_running_service_has_a_healthcheck(compose) -> None:
    for name, definition in compose.services.items():
        if compose.is_one_shot(name):
            assert definition.get("restart") == "no", f"{name} runs once"
            continue
        check = definition.get("healthcheck") or {}
        assert check.get("test"), f"{name} has no healthcheck"
        assert not check.get("disable"), f"{name} disables its healthcheck"


def test_app_services_check_health_on_their_own_port(compose) -> None:
    for name, service in compose.app_services().items():
        if not compose.is_one_shot(name):
            test = " ".join(compose.services[name]["healthcheck"]["test"])
            port = service.port_of(compose.services[name].get("command"))
            assert f"127.0.0.1:{port}/health" in test, name


def test_app_services_have_time_to_answer_requests_in_progress_when_stopped(compose) -> None:
    # Compose's default (10 s) is shorter than the servers' 15 s grace: they would be killed.
    for name in compose.app_services():
        if not compose.is_one_shot(name):
            grace = compose.services[name]["stop_grace_period"]
            assert grace.endswith("s"), name
            assert int(grace.removesuffix("s")) > 15, name


def test_dependencies_wait_for_healthy_services_and_finished_migrations(compose) -> None:
    for name, definition in compose.services.items():
        depends_on = definition.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{name}: depends_on with conditions, not a list"
        for target, condition in depends_on.items():
            expected = (
                "service_completed_successfully"
                if compose.is_one_shot(target)
                else "service_healthy"
            )
            assert condition == {"condition": expected}, f"{name} -> {target}: {condition}"


def test_each_database_service_starts_after_its_one_migration_run(compose) -> None:
    apps = compose.app_services()
    for name, service in apps.items():
        if compose.is_one_shot(name) or not service.has_database:
            continue
        runs = [
            target
            for target in compose.services[name]["depends_on"]
            if compose.is_one_shot(target) and apps.get(target) == service
        ]
        assert len(runs) == 1, f"{name} waits for its migration one-shot"
        one_shot, server = compose.services[runs[0]], compose.services[name]
        # The same image and configuration: production settings are validated to migrate too.
        # The image's other processes (webhooks' dispatcher) add their own NATS user only.
        own = {"NATS_NKEY_SEED_FILE"} if "build" not in server else set()
        for key in ("image", "environment", "secrets"):
            differs = {
                item
                for item in _items(server.get(key)) ^ _items(one_shot.get(key))
                if item[0] not in own and not str(item[0]).startswith("nats_")
            }
            assert not differs, f"{runs[0]} and {name} differ on {key}: {differs}"
        # Built once, by the service (two builds of one tag can collide); never pulled. Its
        # other processes (webhooks' dispatcher) run the image their service builds.
        assert "build" not in one_shot
        assert one_shot["pull_policy"] == "never"
        assert server["pull_policy"] == ("build" if "build" in server else "never")


def _items(value: object) -> set[tuple[object, ...]]:
    """A compose value as a set of comparable items: a mapping's pairs, a list's entries."""
    if isinstance(value, dict):
        return {(key, str(item)) for key, item in value.items()}
    if isinstance(value, list):
        return {(item,) for item in value}
    return {(value,)} if value is not None else set()


def test_the_gateway_and_users_service_and_nothing_else_need_redis(compose) -> None:
    # Their rate-limit buckets: the gateway's per address, users-service's per account.
    users = {name for name, svc in compose.services.items() if "redis" in svc.get("depends_on", {})}
    assert users == {"gateway", "users-service"}


def test_services_do_not_load_whole_env_files(compose) -> None:
    # env_file would hand every service every secret; each gets only what it names.
    assert not [name for name, svc in compose.services.items() if "env_file" in svc]


def test_env_example_documents_exactly_the_variables_compose_reads(
    compose, swarm_overlay_names, env_example
) -> None:
    # docker-compose.yml's, and what a Swarm stack adds (deploy/swarm/stack.sh reads .env).
    used = compose.interpolated_names() | swarm_overlay_names
    assert set(env_example) - used == set(), "documented but never used"
    assert used - set(env_example) == set(), "used by the compose files, not in .env.example"


def test_every_variable_in_env_example_has_a_comment_nearby() -> None:
    lines = (ROOT / ".env.example").read_text().splitlines()
    for index, line in enumerate(lines):
        if line and not line.startswith("#"):
            above = lines[max(0, index - 6) : index]
            assert any(text.startswith("#") for text in above), f"explain {line.split('=')[0]}"


def test_compose_refuses_to_start_without_each_secret(compose, blank_secrets, filled_env) -> None:
    for secret in blank_secrets:
        variables = dict(filled_env, **{secret: ""})
        users = [
            name for name in compose.services if f"${{{secret}:?" in str(compose.services[name])
        ]
        assert users, f"no service requires {secret}"
        for name in users:
            with pytest.raises(ValueError, match=secret):
                compose.environment(name, variables)


def test_the_signing_key_is_a_secret_file_where_users_service_reads_it(compose, filled_env) -> None:
    secret = compose.data["secrets"]["jwt_private_key"]
    assert "${JWT_PRIVATE_KEY_PATH" in compose.text
    assert secret["file"].startswith("${JWT_PRIVATE_KEY_PATH")
    for name, service in compose.app_services().items():
        mounted = compose.services[name].get("secrets", [])
        secrets = [s for s in mounted if not s.startswith("nats_")]  # seeds: test_broker.py
        if service.member == "users-service":
            assert secrets == ["jwt_private_key", "admin_password"]
            environment = compose.environment(name, filled_env)
            assert environment["JWT_PRIVATE_KEY_FILE"] == "/run/secrets/jwt_private_key"
            assert environment["ADMIN_PASSWORD_FILE"] == "/run/secrets/admin_password"
            assert "ADMIN_PASSWORD" not in environment  # a file, never a variable
        else:
            assert "jwt_private_key" not in compose.services[name].get("secrets", []), name


def test_the_webhook_secrets_key_is_a_secret_file_where_the_api_and_dispatcher_read_it(
    compose, filled_env
) -> None:
    secret = compose.data["secrets"]["webhook_secrets_key"]
    assert secret["file"].startswith("${WEBHOOK_SECRETS_KEY_PATH")
    for name, service in compose.app_services().items():
        mounted = "webhook_secrets_key" in compose.services[name].get("secrets", [])
        if service.member != "webhooks-service":
            assert not mounted, f"{name} needs no webhook secrets key"
            continue
        environment = compose.environment(name, filled_env)
        assert environment["WEBHOOK_SECRETS_KEY_FILE"] == "/run/secrets/webhook_secrets_key"
        assert mounted, name


def test_the_default_key_paths_are_git_ignored(filled_env) -> None:
    for variable in ("JWT_PRIVATE_KEY_PATH", "WEBHOOK_SECRETS_KEY_PATH"):
        key = ROOT / filled_env[variable]
        ignore = key.parent / ".gitignore"
        assert ignore.exists(), f"{key.parent} keeps secrets: it needs a .gitignore"
        assert ignore.read_text().splitlines()[-2:] == ["*", "!.gitignore"]


def test_postgres_keeps_its_data_in_a_named_volume_and_runs_the_init_script(compose) -> None:
    postgres = compose.services["postgres"]
    assert postgres["image"] == "${POSTGRES_IMAGE:-postgres:16-alpine}"
    volumes = compose.data["volumes"]
    data_mounts = [v for v in postgres["volumes"] if v.endswith(":/var/lib/postgresql/data")]
    assert len(data_mounts) == 1
    assert data_mounts[0].split(":")[0] in volumes, "a named volume, not a host folder"
    init_mounts = [v for v in postgres["volumes"] if "/docker-entrypoint-initdb.d/" in v]
    assert init_mounts == [
        "./deploy/postgres/init.sh:/docker-entrypoint-initdb.d/10-service-databases.sh:ro"
    ]
    # Executable, so the image's entrypoint runs it instead of sourcing it into its own shell.
    assert os.access(INIT_SCRIPT, os.X_OK)


def test_each_database_service_has_its_own_role_and_database(compose, filled_env) -> None:
    script = INIT_SCRIPT.read_text()
    created = dict(re.findall(r"^create_service_database (\w+) (\w+)$", script, re.MULTILINE))
    postgres_env = compose.environment("postgres", filled_env)
    seen = set()
    for name, service in compose.app_services().items():
        if not service.has_database:
            continue
        url = urlsplit(compose.environment(name, filled_env)[service.database_variable])
        assert url.username == url.path.lstrip("/"), f"{name}: role and database share a name"
        assert url.username in created, f"init.sh does not create {url.username}"
        assert url.password == postgres_env[created[url.username]], f"{name}: password differs"
        seen.add(url.username)
    assert seen == set(created), "one database per service, no more"


def test_every_url_names_a_compose_service_on_the_port_it_listens_on(compose, filled_env) -> None:
    ports = dict(DATASTORE_PORTS)
    ports |= {name: svc.port for name, svc in compose.app_services().items()}
    for name in compose.app_services():
        for variable, value in compose.environment(name, filled_env).items():
            if "://" not in value or variable in PUBLIC_URLS:
                continue
            url = urlsplit(value)
            assert url.hostname in compose.services, f"{name} {variable}: no service {url.hostname}"
            assert url.port == ports[url.hostname], f"{name} {variable}: {url.hostname}:{url.port}"
            assert not compose.is_one_shot(url.hostname)


def test_shell_scripts_pass_shellcheck(run_tool) -> None:
    scripts = sorted((ROOT / "deploy").rglob("*.sh"))
    assert INIT_SCRIPT in scripts
    result = run_tool("shellcheck", *scripts)
    assert result.returncode == 0, result.stdout
