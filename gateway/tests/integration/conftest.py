"""Fixtures: a token signer, and ways to start a gateway in front of given upstreams."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from sanic import Sanic

from api_testkit.in_process import serve_in_process
from api_testkit.ports import free_port
from api_testkit.tokens import TestSigner
from gateway.app import create_app
from gateway.context import wire
from gateway.settings import Settings

from .stand_ins import echo_upstream, refused_url


class GatewayClient(httpx.AsyncClient):
    """A client of the gateway's public port that can also reach its admin port."""

    admin_url: str

    async def admin_get(self, path: str) -> httpx.Response:
        return await self.get(f"{self.admin_url}{path}")


StartGateway = Callable[..., contextlib.AbstractAsyncContextManager[GatewayClient]]


@pytest.fixture(scope="session")
def signer() -> TestSigner:
    return TestSigner()


def isolated_settings(**settings: Any) -> Settings:
    """The given settings, over defaults that refuse every upstream and lift the rate limit."""
    defaults: dict[str, Any] = {
        "users_service_urls": [refused_url()],
        "orders_service_urls": [refused_url()],
        "books_service_urls": [refused_url()],
        "webhooks_service_urls": [refused_url()],
        "rate_limit_rps": 1000.0,
        "rate_limit_burst": 1000,
        "admin_port": free_port(),
    }
    return Settings(**(defaults | settings))


@pytest.fixture
def gateway_settings() -> Callable[..., Settings]:
    """``isolated_settings``, for the test modules that start a gateway of their own."""
    return isolated_settings


@pytest.fixture
def start_gateway(
    signer: TestSigner,
) -> StartGateway:
    """Start a gateway in this process with the given settings; yield a client for it."""

    @contextlib.asynccontextmanager
    async def start(**settings: Any) -> AsyncIterator[GatewayClient]:
        Sanic.test_mode = True
        chosen = isolated_settings(**settings)
        app = create_app(chosen, context=wire(chosen, verifier=signer.verifier()))
        async with (
            serve_in_process(app) as url,
            GatewayClient(base_url=url, timeout=10.0) as client,
        ):
            client.admin_url = f"http://127.0.0.1:{chosen.admin_port}"
            yield client

    return start


@pytest.fixture
def start_echo_gateway(start_gateway: StartGateway) -> StartGateway:
    """Start a gateway whose named upstreams (``"users"``, ...) are echoes, the others refused.

    ``start_echo_gateway("users", "books", **settings)``; the echoes stop with the gateway.
    """

    @contextlib.asynccontextmanager
    async def start(*upstreams: str, **settings: Any) -> AsyncIterator[GatewayClient]:
        async with contextlib.AsyncExitStack() as stack:
            for name in upstreams:
                url = await stack.enter_async_context(echo_upstream(name))
                settings[f"{name}_service_urls"] = [url]
            yield await stack.enter_async_context(start_gateway(**settings))

    return start
