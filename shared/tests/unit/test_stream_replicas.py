"""A publishing service keeps its stream on ``EVENTS_STREAM_REPLICAS`` NATS servers: one
server by default, three on a cluster."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
