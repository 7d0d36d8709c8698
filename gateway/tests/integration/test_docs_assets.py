"""The Swagger UI page's integrity hashes are those of the pinned npm package's files.

Runs ``npm pack`` for the pinned version (cached in ``GATEWAY_TEST_CACHE_DIR``, default
``<repo>/.cache/gateway-swagger-ui``) and hashes the files from the real tarball: the CDN
serves those bytes, so a browser would refuse anything else.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gateway.swagger import (
    SWAGGER_UI,
    SWAGGER_UI_PACKAGE,
    SWAGGER_UI_SCRIPT,
    SWAGGER_UI_STYLESHEET,
    SWAGGER_UI_VERSION,
    Asset,
)

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
        assert f'"{asset.url}"\n' in SWAGGER_UI
        assert f'integrity="{asset.integrity}" crossorigin="anonymous"' in SWAGGER_UI
    assert "@5/" not in SWAGGER_UI  # no floating version anywhere
