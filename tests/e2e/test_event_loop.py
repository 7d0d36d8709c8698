"""Every service process serves on uvloop, not on asyncio's own (slower) event loop."""

from __future__ import annotations

import json

import pytest

from api_testkit.stack import Stack


@pytest.mark.processes  # reads the services' logs
async def test_every_service_process_runs_on_uvloop(stack: Stack) -> None:
    loops: dict[str, list[object]] = {}
    for name, service in stack.services.items():
        log = service.log_path.read_text().splitlines()
        lines = [json.loads(line) for line in log if line.startswith("{")]
        loops[name] = [
            line["eventLoop"]
            for line in lines
            if line.get("logger") == "api_shared.runner" and line["message"] == "serving"
        ]

    assert loops, "the stack has services"
    # A service restarted by an earlier test has one line per start.
    assert all(found and set(found) == {"uvloop.Loop"} for found in loops.values()), loops
