"""A gateway stopped by SIGTERM, as an orchestrator stops it, ends its open streams at once and
cleanly (their last chunk), instead of holding its drain for them; the client then reconnects,
to another replica, with Last-Event-ID. A real gateway process, its own event loop (uvloop)
and Sanic's own shutdown: the part of it an in-process server does not run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import httpx

from api_testkit.environment import HARNESS_PREFIXES
from api_testkit.ports import free_port
from api_testkit.processes import Service
from api_testkit.tokens import TestSigner

from .stand_ins import documents_upstream, refused_url
from .stream_stand_in import (
    STREAM_PATH,
    WAIT_S,
    frame,
    read_rest,
    read_until,
    stream_upstream,
)


def _gateway(log: Path, webhooks: str, users: str) -> Service:
    port, admin_port = free_port(), free_port()
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(HARNESS_PREFIXES)
    }
    env.update(
        {
            "APP_ENV": "development",
            "GATEWAY_PORT": str(port),
            "GATEWAY_ADMIN_PORT": str(admin_port),
            "WEBHOOKS_SERVICE_URL": webhooks,
            "USERS_SERVICE_URL": users,
            "JWKS_URL": f"{users}/.well-known/jwks.json",
            "ORDERS_SERVICE_URL": refused_url(),
            "BOOKS_SERVICE_URL": refused_url(),
        }
    )
    command = [sys.executable, "-m", "gateway"]
    return Service("gateway", command, env, log, port=port, admin_port=admin_port)


async def test_a_stopping_gateway_ends_its_open_streams_cleanly_at_once(
    tmp_path: Path, signer: TestSigner
) -> None:
    auth = {"Authorization": f"Bearer {signer.token('user-1')}"}
    async with (
        stream_upstream() as upstream,
        documents_upstream({"/.well-known/jwks.json": signer.jwks()}) as users,
    ):
        gateway = _gateway(tmp_path / "gateway.log", upstream.url, users)
        gateway.start()
        try:
            await gateway.until_ready()
            async with (
                httpx.AsyncClient(base_url=gateway.url, timeout=WAIT_S) as client,
                client.stream("GET", STREAM_PATH, headers=auth) as response,
            ):
                call = await upstream.next_call()
                chunks = response.aiter_raw()
                call.send(frame("e-1"))
                first = await read_until(chunks)
                assert gateway.pid is not None
                os.kill(gateway.pid, signal.SIGTERM)
                # Its last chunk, not a connection cut when the drain's grace has run out.
                rest = await read_rest(chunks)
                await call.closed_by_gateway()
            exit_code = await asyncio.to_thread(gateway.process.wait, WAIT_S)  # type: ignore[union-attr]
        finally:
            gateway.stop()

    assert response.status_code == 200
    assert (first, rest) == (frame("e-1"), b"")
    assert exit_code == 0, gateway.log_tail()
    lines = [json.loads(line) for line in gateway.log_path.read_text().splitlines()]
    (access,) = [line for line in lines if line.get("path") == STREAM_PATH]
    assert access["streamEnd"] == "shutdown"
    assert access["status"] == 200
