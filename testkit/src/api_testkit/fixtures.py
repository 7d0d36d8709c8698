"""The pytest fixtures every suite shares; pytest loads this module as a plugin (the
``pytest11`` entry point of the test kit's pyproject.toml)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from sanic import Sanic

from api_shared.http import HttpSession

from .http_sessions import open_session


@pytest.fixture(scope="session", autouse=True)
def sanic_test_mode() -> None:
    # Tests start several apps in one process; Sanic's start-up code rewriting (TouchUp)
    # only supports that in test mode, which must be on before the first app starts.
    Sanic.test_mode = True


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the suite's server (its conftest provides ``base_url``)."""
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


@pytest.fixture
async def http_session() -> AsyncIterator[HttpSession]:
    """A service's HTTP session (api_shared.http), open for the test."""
    async with open_session(timeout_s=5.0) as session:
        yield session


def environment_without(*names: str) -> Callable[[pytest.MonkeyPatch], None]:
    """An autouse fixture that unsets ``names`` for each test of the module assigning it
    (``clean_environment = environment_without(...)``): settings tests read only what they
    set, whatever the shell running them exports."""

    @pytest.fixture(autouse=True)
    def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
        for name in names:
            monkeypatch.delenv(name, raising=False)

    return clean_environment
