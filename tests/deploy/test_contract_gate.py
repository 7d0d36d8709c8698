"""The contract gate (tools/contracts/gate.py, `make contracts`) on a git repository of its own.

The repository holds a service's real pyproject.toml and snapshots (users-service's OpenAPI
and AsyncAPI, books-graphql's SDL), committed as its release; each test commits a change of
the contract, then runs the gate's compatibility step (the diff tools for real) on it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "users-service"
SNAPSHOT = f"{SERVICE}/contracts/openapi.json"
EVENTS = f"{SERVICE}/contracts/asyncapi.json"
BOOKS_SDL = "books-graphql/contracts/schema.graphql"
USER = "UserPublic"  # the body of every response that returns a user
TIMESTAMP = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=gate", "-c", "user.email=gate@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _released(repo: Path, service: str, snapshots: tuple[str, ...]) -> Path:
    """``service`` at 1.0.0 with ``snapshots``, committed (no tag: history is the baseline)."""
    for name in (f"{service}/pyproject.toml", *snapshots):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    _set_version(repo, "1.0.0", service)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{service} 1.0.0")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _released(tmp_path, SERVICE, (SNAPSHOT, EVENTS))


def _set_version(repo: Path, version: str, service: str = SERVICE) -> None:
    path = repo / service / "pyproject.toml"
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("version = "))
    lines[at] = f'version = "{version}"\n'
    path.write_text("".join(lines))


def _change_user(repo: Path, change: Callable[[dict[str, Any]], None], message: str) -> None:
    path = repo / SNAPSHOT
    document = json.loads(path.read_text())
    change(document["components"]["schemas"][USER])
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _git(repo, "commit", "-q", "-am", message)


def _bump(repo: Path, version: str, service: str = SERVICE) -> None:
    _set_version(repo, version, service)
    _git(repo, "commit", "-q", "-am", f"{service} {version}")


def _remove_email(user: dict[str, Any]) -> None:
    del user["properties"]["email"]
    user["required"].remove("email")


def _add_nickname(user: dict[str, Any]) -> None:
    user["properties"]["nickname"] = {"type": "string"}


def _gate(repo: Path, service: str = SERVICE) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "tools/contracts/gate.py"), "--root", str(repo)]
    return subprocess.run(
        [*command, "--no-generate", "--service", service],
        capture_output=True,
        text=True,
        check=False,
    )


def test_removing_a_response_field_fails_the_gate_until_the_major_version_moves(
    repo: Path,
) -> None:
    _change_user(repo, _remove_email, "Users: no email in the body")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "breaking: response.body.scope.add at paths./api/users/me.get" in refused.stdout
    assert "need a major version above 1" in refused.stderr

    _bump(repo, "2.0.0")
    passed = _gate(repo)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "users-service 2.0.0 against 1.0.0" in passed.stdout


def test_a_minor_bump_does_not_allow_a_breaking_change(repo: Path) -> None:
    _change_user(repo, _remove_email, "Users: no email in the body")
    _bump(repo, "1.1.0")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr


def test_an_added_response_field_needs_a_minor_bump(repo: Path) -> None:
    _change_user(repo, _add_nickname, "Users: a nickname")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "need at least a minor bump" in refused.stderr

    _bump(repo, "1.1.0")
    passed = _gate(repo)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_the_latest_release_tag_is_the_baseline_so_a_later_break_is_caught(repo: Path) -> None:
    _change_user(repo, _add_nickname, "Users: a nickname")
    _bump(repo, "1.1.0")
    _git(repo, "tag", "users-service-v1.1.0")
    _change_user(repo, _remove_email, "Users: no email in the body")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "against 1.1.0 (users-service-v1.1.0)" in refused.stdout


def test_an_unchanged_contract_passes_against_its_own_release(repo: Path) -> None:
    passed = _gate(repo)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "no contract change" in passed.stdout


def test_removing_an_event_type_fails_the_gate_until_the_major_version_moves(
    repo: Path,
) -> None:
    path = repo / EVENTS
    document = json.loads(path.read_text())
    del document["channels"]["usersUserDeleted"]
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _git(repo, "commit", "-q", "-am", "Users: no users.user.deleted event")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "asyncapi.json: breaking: remove /channels/usersUserDeleted" in refused.stdout

    _bump(repo, "2.0.0")
    assert _gate(repo).returncode == 0


def test_removing_a_graphql_field_fails_the_gate_until_the_major_version_moves(
    tmp_path: Path,
) -> None:
    repo = _released(tmp_path, "books-graphql", (BOOKS_SDL,))
    path = repo / BOOKS_SDL
    path.write_text(path.read_text().replace("  author: String!\n", "", 1))
    _git(repo, "commit", "-q", "-am", "Books: no author")

    refused = _gate(repo, "books-graphql")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "FIELD_REMOVED: Field Book.author was removed." in refused.stdout

    _bump(repo, "2.0.0", "books-graphql")
    assert _gate(repo, "books-graphql").returncode == 0


def test_a_new_event_data_field_needs_a_minor_bump(repo: Path) -> None:
    path = repo / EVENTS
    document = json.loads(path.read_text())
    user = document["components"]["schemas"][USER]
    user["properties"]["nickname"] = {"type": "string"}
    user["required"].append("nickname")
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _git(repo, "commit", "-q", "-am", "Users: events carry a nickname")

    refused = _gate(repo)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"asyncapi.json: non-breaking: add /components/schemas/{USER}/properties/nickname" in (
        refused.stdout
    )
    assert "need at least a minor bump" in refused.stderr

    _bump(repo, "1.1.0")
    assert _gate(repo).returncode == 0


def _change_update(repo: Path, change: Callable[[dict[str, Any]], None], message: str) -> None:
    path = repo / SNAPSHOT
    document = json.loads(path.read_text())
    change(document["components"]["schemas"]["UserUpdate"]["properties"])
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _git(repo, "commit", "-q", "-am", message)


def test_a_bound_the_format_already_implies_narrows_nothing(repo: Path) -> None:
    def add_reference(fields: dict[str, Any]) -> None:
        # Output-only fields a client may send back unchanged, as an order's in PUT.
        fields["reference"] = {"type": "string", "format": "uuid", "readOnly": True}
        fields["since"] = {
            "type": "string",
            "format": "date-time",
            "pattern": TIMESTAMP,
            "readOnly": True,
        }

    _change_update(repo, add_reference, "Users: a reference")
    _bump(repo, "1.1.0")
    assert _gate(repo).returncode == 0

    def bound_reference(fields: dict[str, Any]) -> None:
        fields["reference"]["maxLength"] = 36  # a UUID is 36 characters whatever the bound
        fields["since"]["maxLength"] = 20  # so is the pattern's timestamp 20

    _change_update(repo, bound_reference, "Users: the reference's length stated")
    stated = _gate(repo)  # against 1.0.0, as 1.1.0 is not released yet: an addition
    assert stated.returncode == 0, stated.stdout + stated.stderr
    assert ": breaking:" not in stated.stdout

    def shorten_name(fields: dict[str, Any]) -> None:
        fields["name"]["maxLength"] = 50  # refuses names that were accepted

    _change_update(repo, shorten_name, "Users: shorter names")
    _bump(repo, "1.2.0")
    narrowed = _gate(repo)
    assert narrowed.returncode == 1, narrowed.stdout + narrowed.stderr
    assert ": breaking: request.body.scope.remove" in narrowed.stdout


def test_the_differ_sees_no_bound_that_a_format_or_pattern_already_implies() -> None:
    spec = importlib.util.spec_from_file_location("classify", ROOT / "tools/contracts/classify.py")
    assert spec is not None
    assert spec.loader is not None
    classify = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("classify", classify)  # its dataclass looks itself up there
    spec.loader.exec_module(classify)

    field = {"type": "string", "readOnly": True}
    document = {
        "openapi": "3.0.3",
        "components": {
            "schemas": {
                "Order": {
                    "type": "object",
                    "properties": {
                        "id": {**field, "format": "uuid", "maxLength": 36},
                        "createdAt": {**field, "pattern": TIMESTAMP, "maxLength": 20},
                        "shortId": {**field, "format": "uuid", "maxLength": 8},
                        "note": {"type": "string", "maxLength": 500},
                    },
                }
            }
        },
    }
    fields = classify._comparable("openapi", json.dumps(document))["components"]["schemas"]["Order"]
    bounds = {name: spec.get("maxLength") for name, spec in fields["properties"].items()}
    # Restated bounds are gone; a tighter one and a free string's stay, to be compared.
    assert bounds == {"id": None, "createdAt": None, "shortId": 8, "note": 500}
