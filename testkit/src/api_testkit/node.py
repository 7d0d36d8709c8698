"""Real JavaScript clients: npm packages installed once into a git-ignored cache, run with
node against a server under test. A missing node or npm fails the calling test, never skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

NPM_INSTALL_TIMEOUT_S = 240.0
NODE_TIMEOUT_S = 120.0


async def _run(
    name: str, argv: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
) -> tuple[bytes, str]:
    """Run ``argv`` (the program found on PATH by ``name``); its output and its errors.

    A missing program, a failure or a timeout fails the calling test with the reason.
    """
    program = shutil.which(name)
    if program is None:
        raise AssertionError(
            f"{name} was not found; install Node.js (apt-get install -y nodejs npm)."
        )
    process = await asyncio.create_subprocess_exec(
        program, *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    try:
        output, errors = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"{name} {argv[0]} took over {timeout_s}s") from None
    if process.returncode != 0:
        raise AssertionError(f"{name} {argv[0]} failed:\n{(output + errors).decode()[-3000:]}")
    return output, errors.decode()


async def npm_install(prefix: Path, packages: Sequence[str]) -> Path:
    """``node_modules`` under ``prefix`` holding the pinned ``packages`` ("name@version").

    Installed on first use and kept (``prefix`` is a git-ignored cache), so later runs need
    no network. Missing npm, or a failed install, fails the calling test with the reason.
    """
    node_modules = prefix / "node_modules"
    if all(_npm_installed(node_modules, spec) for spec in packages):
        return node_modules
    await asyncio.to_thread(prefix.mkdir, parents=True, exist_ok=True)
    options = ["--no-audit", "--no-fund", "--no-save", "--loglevel=error", "--prefix", str(prefix)]
    _, errors = await _run("npm", ["install", *options, *packages], NPM_INSTALL_TIMEOUT_S)
    if not all(_npm_installed(node_modules, spec) for spec in packages):
        raise AssertionError(f"npm install {' '.join(packages)} left them out:\n{errors}")
    return node_modules


def _npm_installed(node_modules: Path, spec: str) -> bool:
    name, _, version = spec.rpartition("@")
    manifest = node_modules / name / "package.json"
    return manifest.is_file() and json.loads(manifest.read_bytes()).get("version") == version


async def run_node(script: Path, node_modules: Path, *args: str) -> bytes:
    """Run a CommonJS ``script`` with node, its ``require`` served from ``node_modules``.

    Returns its standard output; a failing or missing node fails the calling test.
    """
    env = {**os.environ, "NODE_PATH": str(node_modules)}
    output, _ = await _run("node", [str(script), *args], NODE_TIMEOUT_S, env)
    return output
