"""graphql-http's audit of the GraphQL-over-HTTP specification, run with node against us."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

NodePackages = Callable[[str, tuple[str, ...]], Awaitable[Path]]  # conftest's node_packages
AUDIT_SCRIPT = Path(__file__).parents[1] / "data" / "graphql_http_audit.mjs"
AUDIT_PACKAGES = ("graphql-http@1.23.1", "graphql@16.15.0")
NODE_TIMEOUT_S = 300


async def test_every_must_and_should_of_the_graphql_over_http_audit_passes(
    base_url: str, node_packages: NodePackages
) -> None:
    folder = await node_packages("graphql-http-audit", AUDIT_PACKAGES)
    script = folder / AUDIT_SCRIPT.name  # beside node_modules, where ESM resolves packages
    shutil.copyfile(AUDIT_SCRIPT, script)
    process = await asyncio.create_subprocess_exec(
        "node", str(script), f"{base_url}/graphql",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), NODE_TIMEOUT_S)
    assert process.returncode == 0, err.decode()
    audits = orjson.loads(out)

    musts = [a for a in audits if a["name"].startswith("MUST")]
    shoulds = [a for a in audits if a["name"].startswith("SHOULD")]
    failed = [f"{a['name']}: {a['reason']}" for a in musts + shoulds if a["status"] != "ok"]
    assert (len(musts), len(shoulds)) == (13, 23)
    assert failed == []
