"""`make run`'s "ready" line (the Procfile's ``ready``, tools/stack_ready.py): printed once
every process answers /ready, and not while one of them does not."""

from __future__ import annotations

import asyncio
import os

import pytest

from api_testkit.ports import free_port
from api_testkit.processes import shell
from api_testkit.stack import ANNOUNCER, Stack, procfile_commands

pytestmark = pytest.mark.processes  # reads the services' own ports
READY_LINE = b"ready: every service answers"


async def _announcer(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *shell(procfile_commands()[ANNOUNCER]),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
    await process.wait()


def _environment(stack: Stack) -> dict[str, str]:
    """The stack's environment (every port variable), as honcho gives it to the announcer."""
    return {**os.environ, **stack.services["gateway"].env}


async def test_the_line_comes_once_every_service_is_ready(stack: Stack) -> None:
    process = await _announcer(_environment(stack))
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert line.startswith(READY_LINE), line
        gateway_port = stack.services["gateway"].port
        assert f"http://localhost:{gateway_port}".encode() in line
        assert process.returncode is None  # it stays, or honcho would stop the stack
    finally:
        await _stop(process)


async def test_no_line_while_a_service_is_not_ready(stack: Stack) -> None:
    # users-service "moved" to a port where nothing answers: the stack is not all ready.
    process = await _announcer(_environment(stack) | {"USERS_PORT": str(free_port())})
    try:
        assert process.stdout is not None
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(process.stdout.readline(), timeout=3)
        assert process.returncode is None  # still waiting
    finally:
        await _stop(process)
