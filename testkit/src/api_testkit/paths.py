"""Where the repository is: the test kit runs from its workspace checkout, never installed."""

from __future__ import annotations

from pathlib import Path


def _repository() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / "Procfile").is_file() and (folder / "uv.lock").is_file():
            return folder
    raise RuntimeError(f"{__file__} is not inside the platform's repository checkout")


REPO = _repository()
CACHE = REPO / ".cache"  # git-ignored: npm packages, tools
