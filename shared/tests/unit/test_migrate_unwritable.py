"""``migrate`` on a SQLite file that cannot be written fails at once, saying which file.

Tortoise's SQLite client used to hang forever there (``docker run --read-only … migrate``).
The ``wait_for`` only turns a regression into a failure instead of a hung run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from api_shared.database import migrate, tortoise_config
from api_shared.runner import run_service
from api_shared.settings import ConfigurationError, ServiceSettings


def unwritable(tmp_path: Path) -> dict[str, Path]:
    """Paths no process can create a database at, root included."""
    (tmp_path / "a-directory.sqlite3").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    return {
        "the path is a directory": tmp_path / "a-directory.sqlite3",
        "its folder is a file": tmp_path / "a-file" / "db.sqlite3",
    }


def config_for(path: Path) -> dict[str, Any]:
    return tortoise_config(f"sqlite://{path}", "api_shared.nothing", "api_shared.nothing")


@pytest.mark.parametrize("case", ["the path is a directory", "its folder is a file"])
async def test_migrate_refuses_an_unwritable_sqlite_path_at_once(tmp_path: Path, case: str) -> None:
    path = unwritable(tmp_path)[case]
    with pytest.raises(ConfigurationError, match="cannot write the SQLite database") as raised:
        await asyncio.wait_for(migrate(config_for(path)), timeout=30)
    assert str(path) in str(raised.value)


def test_the_migrate_command_exits_non_zero_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process-wide logging set-up is not this test's business.
    monkeypatch.setattr("api_shared.runner.configure_logging", lambda *args: None)
    path = unwritable(tmp_path)["the path is a directory"]

    def never_serve(settings: Any) -> Any:
        raise AssertionError("migrate must not build the app")

    with pytest.raises(SystemExit) as exited:
        run_service(
            "some-service",
            lambda: ServiceSettings(),
            never_serve,
            lambda settings: config_for(path),
            argv=["migrate"],
        )
    assert exited.value.code == 2
    assert f"cannot write the SQLite database '{path}'" in capsys.readouterr().err
