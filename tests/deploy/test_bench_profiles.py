"""The benchmarks' profile reading survives what py-spy may write: a garbled line is counted
and left out, never the end of a `make bench` run."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def profiles() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # the benchmarks import each other as top-level modules
    try:
        return importlib.import_module("profiles")
    finally:
        sys.path.remove(str(BENCH))


def test_a_garbled_sample_line_is_counted_and_left_out(profiles: ModuleType) -> None:
    collapsed = "\n".join(
        [
            "run_forever (asyncio/base_events.py:600);_run_once (uvloop) 30",
            "handle_request (sanic/app.py:1000) 10",
            "(\u4cf0\u5e70\u7f64\x00\x00 (\u4cf0",  # as py-spy once wrote it: no count
            "worker (x.py:1);garbled 12\x00",  # a count that is not a number
        ]
    )
    shares, unreadable = profiles.shares(collapsed)
    assert unreadable == 2
    assert shares == {
        "event loop (uvloop), between callbacks": 0.75,
        "Sanic: HTTP server, request and response": 0.25,
    }


def test_the_notes_say_how_many_lines_were_left_out(profiles: ModuleType) -> None:
    profile = profiles.Profile(cpu_us=100.0, shares={"logging": 1.0}, unreadable=2)
    (sentence, *_) = profiles.notes("The gateway's CPU", {"gateway": profile})
    assert "2 unreadable sample lines left out" in sentence
