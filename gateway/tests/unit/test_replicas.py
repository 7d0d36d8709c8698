"""Replicas take turns; one that refused connections waits at the back for a while."""

from __future__ import annotations

from gateway.upstream.replicas import Upstream


def test_replicas_take_turns() -> None:
    upstream = Upstream.of("users", ["http://a", "http://b"], down_s=5)

    firsts = [upstream.candidates()[0].url for _ in range(4)]

    assert firsts == ["http://a", "http://b", "http://a", "http://b"]


def test_a_replica_marked_down_is_tried_last_until_it_recovers() -> None:
    upstream = Upstream.of("users", ["http://a", "http://b"], down_s=5)
    a = upstream.targets[0]

    upstream.mark_down(a)
    assert [upstream.candidates()[0].url for _ in range(3)] == ["http://b"] * 3

    upstream.mark_up(a)
    assert {upstream.candidates()[0].url for _ in range(2)} == {"http://a", "http://b"}
