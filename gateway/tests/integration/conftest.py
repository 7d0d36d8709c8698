"""Fixtures: a token signer, and a way to start a gateway in front of given upstreams."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from sanic import Sanic

from api_shared.testing import TestSigner, free_port, serve_in_process
from gateway.app import create_app
from gateway.settings import Settings

from .stand_ins import refused_url


class GatewayClient(httpx.AsyncClient):
    """A client of the gateway's public port that can also reach its admin port."""

    admin_url: str

    async def admin_get(self, path: str) -> httpx.Response:
        return await self.get(f"{self.admin_url}{path}")


StartGateway = Callable[..., contextlib.AbstractAsyncContextManager[GatewayClient]]


@pytest.fixture(scope="session")
def signer() -> TestSigner:
    return TestSigner()


@pytest.fixture
def start_gateway(
    signer: TestSigner,
) -> StartGateway:
    """Start a gateway in this process with the given settings; yield a client for it."""

    @contextlib.asynccontextmanager
    async def start(**settings: Any) -> AsyncIterator[GatewayClient]:
        Sanic.test_mode = True
        defaults: dict[str, Any] = {
            "users_service_urls": [refused_url()],
            "orders_service_urls": [refused_url()],
            "books_service_urls": [refused_url()],
            "rate_limit_rps": 1000.0,
            "rate_limit_burst": 1000,
            "admin_port": free_port(),
        }
        chosen = Settings(**(defaults | settings))
        app = create_app(chosen, verifier=signer.verifier())
        async with (
            serve_in_process(app) as url,
            GatewayClient(base_url=url, timeout=10.0) as client,
        ):
            client.admin_url = f"http://127.0.0.1:{chosen.admin_port}"
            yield client

    return start
