"""The publishers' event types webhooks-service offers are those their AsyncAPI snapshots
declare: its generated module is what tools/contracts/published_types.py writes now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from webhooks_service.endpoints.event_types import KNOWN_TYPES, PUBLISHED_TYPES

ROOT = Path(__file__).resolve().parents[3]


def generator() -> ModuleType:
    path = ROOT / "tools/contracts/published_types.py"
    spec = importlib.util.spec_from_file_location("published_types", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_lists_what_the_publishers_snapshots_declare() -> None:
    published = generator()

    assert set(PUBLISHED_TYPES) == published.declared(ROOT)
    assert len(PUBLISHED_TYPES) == len(set(PUBLISHED_TYPES))
    assert (ROOT / published.MODULE).read_text() == published.render(ROOT), (
        "stale: run python tools/contracts/published_types.py"
    )


def test_every_published_type_is_a_known_type() -> None:
    assert set(PUBLISHED_TYPES) <= set(KNOWN_TYPES)
