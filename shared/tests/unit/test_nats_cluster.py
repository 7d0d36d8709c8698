"""A NATS cluster: a publishing service keeps its stream on ``EVENTS_STREAM_REPLICAS``
servers (one by default, three on a cluster), and ``NATS_URL`` may name every server."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api_shared.events.link import server_urls
from api_shared.events.runtime import events_of
from api_shared.events.settings import PublisherSettings
from api_shared.events.streams import ORDERS


def test_a_stream_is_kept_on_one_server_unless_told_otherwise() -> None:
    events = events_of(PublisherSettings(environment="development"), ORDERS, name="orders-service")
    assert events is not None
    assert events.relay.stream.num_replicas == 1


def test_on_a_cluster_the_stream_is_kept_on_as_many_servers_as_configured() -> None:
    settings = PublisherSettings(environment="development", events_stream_replicas=3)
    events = events_of(settings, ORDERS, name="orders-service")
    assert events is not None
    assert events.relay.stream.num_replicas == 3
    assert events.relay.stream.subjects == ORDERS.subjects
    assert ORDERS.num_replicas is None  # the shared definition is left as it is


@pytest.mark.parametrize("replicas", [0, 6])
def test_a_replica_count_jetstream_cannot_keep_is_refused_at_start(replicas: int) -> None:
    with pytest.raises(ValidationError, match=r"(?i)events_stream_replicas"):
        PublisherSettings(environment="development", events_stream_replicas=replicas)


def test_nats_url_may_name_every_server_of_a_cluster() -> None:
    url = "nats://nats-1:4222, nats://nats-2:4222,nats://nats-3:4222"
    assert server_urls(url) == [f"nats://nats-{n}:4222" for n in (1, 2, 3)]
    assert server_urls("nats://127.0.0.1:4223") == ["nats://127.0.0.1:4223"]
