"""The Swagger UI page at ``/docs``: its integrity hashes are those of the pinned npm
package's files, its Content-Security-Policy admits exactly what it runs, and it works under
both in a real browser.

Runs ``npm pack`` for the pinned version (cached in ``GATEWAY_TEST_CACHE_DIR``, default
``<repo>/.cache/gateway-swagger-ui``) and hashes the files from the real tarball: the CDN
serves those bytes, so a browser would refuse anything else. The browser test (headless
Chromium, ``api_testkit.browser``) gets those bytes for the CDN's URLs, intercepted in the
browser: no network, the same checks (CSP, SRI, CORS) as with the CDN.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from api_testkit.browser import headless_chromium, open_page
from gateway.docs.openapi import OPENAPI_PATH
from gateway.swagger import (
    SWAGGER_UI,
    SWAGGER_UI_PACKAGE,
    SWAGGER_UI_SCRIPT,
    SWAGGER_UI_STYLESHEET,
    SWAGGER_UI_VERSION,
    Asset,
)

from .conftest import StartGateway
from .stand_ins import documents_upstream

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE_DIR = Path(
    os.environ.get("GATEWAY_TEST_CACHE_DIR", REPO_ROOT / ".cache" / "gateway-swagger-ui")
)
NPM_PACK_TIMEOUT_S = 240


def _tarball() -> Path:
    tarball = CACHE_DIR / f"{SWAGGER_UI_PACKAGE}-{SWAGGER_UI_VERSION}.tgz"
    if tarball.is_file():
        return tarball
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to check the Swagger UI hashes (apt-get install -y npm).")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "pack", "--silent", f"{SWAGGER_UI_PACKAGE}@{SWAGGER_UI_VERSION}"],
        cwd=CACHE_DIR,
        check=True,
        capture_output=True,
        timeout=NPM_PACK_TIMEOUT_S,
    )
    return tarball


@pytest.mark.parametrize("asset", [SWAGGER_UI_SCRIPT, SWAGGER_UI_STYLESHEET], ids=lambda a: a.path)
def test_each_integrity_hash_matches_the_file_in_the_pinned_npm_package(asset: Asset) -> None:
    with tarfile.open(_tarball()) as archive:
        member = archive.extractfile(f"package/{asset.path}")
        assert member is not None
        digest = hashlib.sha384(member.read()).digest()

    assert asset.integrity == f"sha384-{base64.b64encode(digest).decode()}"


def test_the_page_loads_exactly_the_pinned_files_with_their_hashes() -> None:
    for asset in (SWAGGER_UI_SCRIPT, SWAGGER_UI_STYLESHEET):
        assert f"{SWAGGER_UI_PACKAGE}@{SWAGGER_UI_VERSION}/{asset.path}" in asset.url
        assert f'"{asset.url}"\n' in SWAGGER_UI.html
        assert f'integrity="{asset.integrity}" crossorigin="anonymous"' in SWAGGER_UI.html
    assert "@5/" not in SWAGGER_UI.html  # no floating version anywhere


def _file(path: str) -> bytes:
    with tarfile.open(_tarball()) as archive:
        member = archive.extractfile(f"package/{path}")
        assert member is not None
        return member.read()


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


async def test_the_page_is_sent_with_a_policy_admitting_only_its_own_script_and_the_cdn(
    start_gateway: StartGateway,
) -> None:
    async with start_gateway() as gw:
        response = await gw.get("/docs")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in response.headers["content-security-policy"].split(";")
    )
    inline = re.findall(r"<script>(.*?)</script>", response.text, re.DOTALL)
    assert len(inline) == 1  # the one script the policy admits by its hash
    assert policy["script-src"] == f"https://cdn.jsdelivr.net 'sha256-{_sha256(inline[0])}'"
    assert policy["style-src"] == "https://cdn.jsdelivr.net"  # no inline style either
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert (policy["base-uri"], policy["form-action"]) == ("'none'", "'none'")
    assert "unsafe-eval" not in response.headers["content-security-policy"]


async def test_the_page_shows_the_merged_operations_in_a_browser_under_its_policy(
    start_gateway: StartGateway,
) -> None:
    users_document = {
        "paths": {"/api/users": {"post": {"summary": "Sign up", "responses": {}}}},
    }
    cdn_files = {
        SWAGGER_UI_SCRIPT.url: (_file(SWAGGER_UI_SCRIPT.path), "application/javascript"),
        SWAGGER_UI_STYLESHEET.url: (_file(SWAGGER_UI_STYLESHEET.path), "text/css"),
    }
    async with (
        documents_upstream({OPENAPI_PATH: users_document}) as users,
        start_gateway(users_service_urls=[users]) as gw,
        headless_chromium() as browser,
        open_page(browser) as page,
    ):
        await page.serve(cdn_files)
        await page.call("Page.navigate", url=f"{gw.base_url}/docs")
        shown = await page.wait_for(
            "document.querySelector('.opblock-summary-path[data-path=\"/api/users\"]')"
            " && document.body.innerText",
            "the operations of /openapi.json",
        )
        styled = await page.evaluate(
            "getComputedStyle(document.querySelector('.swagger-ui')).fontFamily"
        )
        page_responses = page.responses(f"{gw.base_url}/docs")
        document_responses = page.responses(f"{gw.base_url}/openapi.json")

    assert "Sign up" in shown
    assert "/health" in shown  # the gateway's own path
    assert "sans-serif" in styled  # the stylesheet applied: it passed SRI and the policy
    assert page_responses == [(f"{gw.base_url}/docs", 200)]
    assert document_responses == [(f"{gw.base_url}/openapi.json", 200)]
    assert page.problems() == []  # a policy violation or a refused file would be here
