"""The helper scripts: deploy/init-secrets.sh (compose) and deploy/k8s/create-dev-secrets.sh."""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import yaml
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from api_shared.events.access import SERVICES
from api_shared.events.credentials import public_key, seed_file

ROOT = Path(__file__).resolve().parents[2]
KEY_PATHS = ("JWT_PRIVATE_KEY_PATH", "WEBHOOK_SECRETS_KEY_PATH", "ADMIN_PASSWORD_PATH")


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / script)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
        timeout=60,
    )


def _env_lines(path: Path) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in path.read_text().splitlines() if line and line[0] != "#"
    )


def test_init_secrets_fills_every_blank_secret_and_creates_a_readable_signing_key(
    tmp_path, env_example, blank_secrets, blank_public_keys
) -> None:
    env_file = tmp_path / ".env"
    result = _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file))
    assert result.returncode == 0, result.stderr

    written = _env_lines(env_file)
    assert list(written) == list(env_example), "every line in its place"
    for name, value in written.items():
        if name in blank_secrets:
            assert re.fullmatch(r"[0-9a-f]{48}", value), f"{name} is not 24 random bytes in hex"
        elif name not in blank_public_keys:
            assert value == env_example[name]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600, ".env holds passwords"

    key_file = tmp_path / written["JWT_PRIVATE_KEY_PATH"]
    key = load_pem_private_key(key_file.read_bytes(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    webhook_key_file = tmp_path / written["WEBHOOK_SECRETS_KEY_PATH"]
    (fernet_key,) = webhook_key_file.read_text().split()
    Fernet(fernet_key)  # a valid key: 32 bytes, URL-safe base64
    # Bind-mounted as is into containers running as uid 10001; the folder keeps others out.
    for path in (key_file, webhook_key_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_init_secrets_makes_a_nats_seed_per_user_and_puts_its_public_key_in_env(
    tmp_path, blank_public_keys
) -> None:
    env_file = tmp_path / ".env"
    result = _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file))
    assert result.returncode == 0, result.stderr

    written = _env_lines(env_file)
    seeds = tmp_path / written["NATS_SEEDS_PATH"]
    for user in SERVICES:
        seed = seed_file(seeds, user.name).read_bytes()
        # What nats-py signs with (the nkeys library) has the key the server is told.
        assert public_key(seed) == written[user.nkey_variable], user.name
        assert stat.S_IMODE(seed_file(seeds, user.name).stat().st_mode) == 0o644  # uid 10001
    assert set(blank_public_keys) == {user.nkey_variable for user in SERVICES}
    assert len({written[name] for name in blank_public_keys}) == len(SERVICES)
    assert stat.S_IMODE(seeds.stat().st_mode) == 0o700
    assert sorted(p.name for p in seeds.iterdir()) == sorted(f"{u.name}.nk" for u in SERVICES)


def test_init_secrets_never_overwrites_an_existing_env_key_or_seed(tmp_path) -> None:
    env_file = tmp_path / ".env"
    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    before = env_file.read_text()
    keys = [tmp_path / _env_lines(env_file)[name] for name in KEY_PATHS]
    keys_before = [key.read_bytes() for key in keys]
    seeds = tmp_path / _env_lines(env_file)["NATS_SEEDS_PATH"]
    seeds_before = {path.name: path.read_bytes() for path in seeds.iterdir()}

    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    assert env_file.read_text() == before
    assert [key.read_bytes() for key in keys] == keys_before
    assert {path.name: path.read_bytes() for path in seeds.iterdir()} == seeds_before


def test_init_secrets_sets_a_public_key_from_the_seed_it_finds(tmp_path) -> None:
    # A .env written again (or by hand) beside the seeds already there: the keys follow them.
    env_file = tmp_path / ".env"
    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    first = _env_lines(env_file)
    env_file.unlink()

    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    again = _env_lines(env_file)
    for user in SERVICES:
        assert again[user.nkey_variable] == first[user.nkey_variable]
    assert again["POSTGRES_PASSWORD"] != first["POSTGRES_PASSWORD"]  # a new .env indeed


def _create_dev_secrets(env_file: Path, tool_bin: Path) -> subprocess.CompletedProcess[str]:
    """create-dev-secrets.sh from ``env_file``, printing the Secrets instead of applying them."""
    return _bash(
        "deploy/k8s/create-dev-secrets.sh",
        ENV_FILE=str(env_file),
        DRY_RUN="1",
        KUBECTL=str(tool_bin / "kubectl"),
    )


def _dev_secrets(tmp_path: Path, tool_bin: Path) -> list[dict[str, Any]]:
    env_file = tmp_path / ".env"
    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    result = _create_dev_secrets(env_file, tool_bin)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_dev_secrets_provide_exactly_the_secret_keys_the_dev_overlay_uses(
    tmp_path, tool_bin, k8s_dev
) -> None:
    documents = _dev_secrets(tmp_path, tool_bin)
    provided = {
        (doc["metadata"]["name"], key)
        for doc in documents
        if doc["kind"] == "Secret"
        for key in doc["data"]
    }
    used = set()
    for doc in k8s_dev.documents:
        if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                for variable in container.get("env", []):
                    if "secretKeyRef" in variable.get("valueFrom", {}):
                        ref = variable["valueFrom"]["secretKeyRef"]
                        used.add((ref["name"], ref["key"]))
            for volume in pod.get("volumes", []):
                # An optional secret (the SMTP password) is the operator's to create, or not.
                if "secret" in volume and not volume["secret"].get("optional"):
                    for item in volume["secret"]["items"]:
                        used.add((volume["secret"]["secretName"], item["key"]))
    assert used - provided == set(), "referenced by the overlay, not created"
    assert provided - used == set(), "created, never used"
    (namespace,) = k8s_dev.of_kind("Namespace")
    assert {doc["metadata"].get("namespace") for doc in documents if doc["kind"] == "Secret"} == {
        namespace
    }


def test_dev_secrets_are_valid_kubernetes_objects(tmp_path, tool_bin, run_tool) -> None:
    rendered = tmp_path / "secrets.yaml"
    rendered.write_text(yaml.safe_dump_all(_dev_secrets(tmp_path, tool_bin)))
    result = run_tool("kubernetes-validate", "--strict", "--quiet", rendered)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dev_secrets_refuse_an_env_with_a_blank_secret(tmp_path, tool_bin) -> None:
    env_file = tmp_path / ".env"
    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    lines = env_file.read_text().splitlines()
    env_file.write_text(
        "\n".join(
            "REDIS_PASSWORD=" if line.startswith("REDIS_PASSWORD=") else line for line in lines
        )
    )
    result = _create_dev_secrets(env_file, tool_bin)
    assert result.returncode != 0
    assert "REDIS_PASSWORD" in result.stderr


def test_dev_secrets_give_the_nats_servers_the_cluster_password_init_secrets_wrote(
    tmp_path, tool_bin
) -> None:
    # The same file Docker Swarm's servers read: one password for the routes, created once.
    documents = _dev_secrets(tmp_path, tool_bin)
    (secret,) = [d for d in documents if d["metadata"]["name"] == "nats-cluster"]
    password = (tmp_path / "deploy" / "secrets" / "nats_cluster_password").read_bytes()
    assert re.fullmatch(rb"[0-9a-f]{48}\n", password), "24 random bytes in hex"
    assert base64.b64decode(secret["data"]["password"]) == password


def test_dev_secrets_refuse_to_run_without_the_cluster_password(tmp_path, tool_bin) -> None:
    env_file = tmp_path / ".env"
    assert _bash("deploy/init-secrets.sh", ENV_FILE=str(env_file)).returncode == 0
    (tmp_path / "deploy" / "secrets" / "nats_cluster_password").unlink()
    result = _create_dev_secrets(env_file, tool_bin)
    assert result.returncode != 0
    assert "no NATS cluster password at" in result.stderr
    assert "kind: Secret" not in result.stdout
