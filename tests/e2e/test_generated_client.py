"""A client generated from the gateway's ``/openapi.json`` works as generated.

``openapi-python-client`` (what a Python team would run on the published document) writes a
client of the document the running gateway serves, with ``--fail-on-warning``: a schema it
cannot follow fails the generation. The test then uses that client, unedited, for a
script's first steps: sign up, log in, mint an API key, list orders with the key, revoke it,
and find it refused (docs/contracts.md#the-published-document).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from api_testkit.actors import PASSWORD, new_email
from api_testkit.stack import Stack

PACKAGE = "api_platform_client"  # from the document's title, "API platform"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")


@pytest.fixture(scope="module")
async def client_package(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The generated package, imported from a folder of its own."""
    folder = tmp_path_factory.mktemp("generated")
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway:
        served = await gateway.get("/openapi.json")
    assert served.status_code == 200, served.text
    document = folder / "openapi.json"
    document.write_bytes(served.content)
    generator = await asyncio.create_subprocess_exec(
        str(GENERATOR), "generate", "--path", str(document), "--meta", "none",
        "--fail-on-warning", "--output-path", str(folder / PACKAGE),
        cwd=folder, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await generator.communicate()
    assert generator.returncode == 0, output.decode()
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))


def module(package: ModuleType, name: str) -> ModuleType:
    return importlib.import_module(f"{package.__name__}.{name}")


async def test_a_generated_client_signs_up_logs_in_and_uses_then_revokes_a_key(
    client_package: ModuleType, stack: Stack
) -> None:
    client = module(client_package, "client")
    models = module(client_package, "models")
    create_user = module(client_package, "api.users.create_user")
    issue_token = module(client_package, "api.auth.issue_token")
    create_api_key = module(client_package, "api.api_keys.create_api_key")
    revoke_api_key = module(client_package, "api.api_keys.revoke_api_key")
    list_orders = module(client_package, "api.orders.list_orders")
    anonymous = client.Client(base_url=stack.gateway_url)
    email = new_email("generated")

    # Sign-up takes anonymous callers: the plain client, and every field of UserCreate.
    signed_up = await create_user.asyncio_detailed(
        client=anonymous, body=models.UserCreate(name="Gen", email=email, password=PASSWORD)
    )
    logged_in = await issue_token.asyncio_detailed(
        client=anonymous, body=models.TokenRequest(email=email, password=PASSWORD)
    )
    assert signed_up.status_code == 201, signed_up.content
    assert isinstance(signed_up.parsed, models.UserPublicItem)
    assert signed_up.parsed.data.name == "Gen"
    assert signed_up.parsed.data.email.lower() == email.lower()  # stored normalised
    assert logged_in.status_code == 200, logged_in.content
    token = logged_in.parsed.data.access_token
    person = client.AuthenticatedClient(base_url=stack.gateway_url, token=token)

    # A fresh login is recent authentication: the key needs no password.
    minted = await create_api_key.asyncio_detailed(
        client=person,
        body=models.ApiKeyCreate(
            name="report script", scopes=[models.ApiKeyCreateScopesItem.ORDERSREAD]
        ),
    )
    assert minted.status_code == 201, minted.content
    key = minted.parsed.data
    script = client.AuthenticatedClient(base_url=stack.gateway_url, token=key.secret)
    listed = await list_orders.asyncio_detailed(client=script)
    revoked = await revoke_api_key.asyncio_detailed(client=person, key_id=key.id)
    await asyncio.sleep(stack.standing_cache_s)
    refused = await list_orders.asyncio_detailed(client=script)

    assert listed.status_code == 200, listed.content
    assert isinstance(listed.parsed, models.OrderPublicPage)
    assert (listed.parsed.data, listed.parsed.page.total) == ([], 0)
    assert revoked.status_code == 204, revoked.content
    assert refused.status_code == 401, refused.content
    assert isinstance(refused.parsed, models.Error)
    assert refused.parsed.error.code == models.ErrorDetailCode.UNAUTHENTICATED
