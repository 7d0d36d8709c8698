"""Fixtures: a token signer, and a way to start a gateway in front of given upstreams."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from sanic import Sanic

from api_shared.testing import TestSigner, serve_in_process
from gateway.app import create_app
from gateway.settings import Settings

from .stand_ins import refused_url

StartGateway = Callable[..., contextlib.AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture(scope="session")
def signer() -> TestSigner:
    return TestSigner()


@pytest.fixture
def start_gateway(
    signer: TestSigner,
) -> StartGateway:
    """Start a gateway in this process with the given settings; yield a client for it."""

    @contextlib.asynccontextmanager
    async def start(**settings: Any) -> AsyncIterator[httpx.AsyncClient]:
        Sanic.test_mode = True
        defaults: dict[str, Any] = {
            "users_service_urls": [refused_url()],
            "orders_service_urls": [refused_url()],
            "books_service_urls": [refused_url()],
            "rate_limit_rps": 1000.0,
            "rate_limit_burst": 1000,
        }
        app = create_app(Settings(**(defaults | settings)), verifier=signer.verifier())
        async with (
            serve_in_process(app) as url,
            httpx.AsyncClient(base_url=url, timeout=10.0) as client,
        ):
            yield client

    return start
