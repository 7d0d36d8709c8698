"""What a service process prints while it starts: JSON lines, and nothing else.

Log collectors read a service's output line by line as JSON; a line that is not (a bare
Python warning on stderr, a banner) is lost or breaks the parse. The start-up is shared by
every service (api_shared.runner, api_shared.logging): users-service stands for them.
"""

from __future__ import annotations

import json
from typing import Any

ProcessLauncher = Any  # the conftest fixture: start(**env), running(**env)


async def test_every_line_a_service_prints_up_to_ready_is_json_and_none_is_a_warning(
    launcher: ProcessLauncher,
) -> None:
    async with launcher.running() as service:  # /ready has answered 200
        printed = service.stdout.read_text().splitlines() + service.stderr.read_text().splitlines()

    not_json = [line for line in printed if not _is_json_object(line)]
    lines = [json.loads(line) for line in printed if _is_json_object(line)]
    assert not_json == []
    assert any(line["message"] == "serving" for line in lines)  # the start-up's last listener
    assert [line for line in lines if line["logger"] == "py.warnings"] == []


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
