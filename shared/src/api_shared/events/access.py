"""Who may do what on the broker: one NATS user per process that connects, each allowed the
subjects its work needs and nothing else. No client connects without a user.

JetStream's API is a set of request subjects, so what a client may do to streams and
consumers is where it may publish. nats-py, for this platform's two kinds of work:

- a publisher (an outbox relay) publishes its own events (``<service>.events.>``) and makes
  sure of its own stream: ``$JS.API.STREAM.{INFO,CREATE,UPDATE}.<STREAM>``;
- a durable pull consumer looks its consumer up (``$JS.API.CONSUMER.INFO.<STREAM>.<durable>``),
  creates it when missing (``$JS.API.CONSUMER.CREATE.<STREAM>.<durable>.<filter>``), asks for
  messages (``$JS.API.CONSUMER.MSG.NEXT.<STREAM>.<durable>``) and acks, naks or terminates
  them (``$JS.ACK.<STREAM>.<durable>.>``). It needs no ``$JS.FC.`` (flow control is for push
  consumers) and no stream of its own; a stream is its publisher's to create;
- every answer (API replies, publish acks, fetched messages) comes to the client's own inbox,
  ``_INBOX.<user>.>`` (``NatsLink`` connects with that prefix): no one reads another's replies.

Anything else is refused by the server ("Permissions Violation"): users-service cannot
publish an ``orders.*`` event, orders-service a ``users.*`` one, the webhooks dispatcher
anything onto a stream, and nobody deletes a stream or another's consumer.

The durable names are the consumers' own (``orders_service.events``,
``webhooks_service.delivery.intake``): should one change without this table, that consumer is
refused and its service's event tests fail. The server's config is rendered from here, for
``make run`` and the test kit (``server.py``) as for the deployments (``deploy/nats/nats.conf``,
``python -m api_shared.events.access``; tests/deploy checks it is up to date).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from nats.js.api import StreamConfig

from api_shared.events.streams import ORDERS, USERS

MONITORING = "127.0.0.1:8222"
"""The deployments' monitoring endpoint (/healthz for their probes): on loopback only, so no
other container or pod reads the server's connections and subjects."""


def inbox_of(user: str) -> str:
    """The inbox prefix of ``user``'s connection: its replies arrive under it, and only it may
    subscribe there."""
    return f"_INBOX.{user}"


@dataclass(frozen=True, slots=True)
class Identity:
    """One NATS user: its name and the subjects it may publish and subscribe to."""

    name: str
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]

    @property
    def nkey_variable(self) -> str:
        """The variable that gives the server this user's public NKey (``NATS_<USER>_NKEY``)."""
        return f"NATS_{self.name.upper().replace('-', '_')}_NKEY"


def publishes(stream: StreamConfig) -> tuple[str, ...]:
    """A relay's rights: its events, and making sure of its stream."""
    actions = ("INFO", "CREATE", "UPDATE")
    events = tuple(stream.subjects or ())
    return (*events, *(f"$JS.API.STREAM.{action}.{stream.name}" for action in actions))


def consumes(stream: StreamConfig, durable: str, subject: str) -> tuple[str, ...]:
    """A durable pull consumer's rights on ``stream``, its filter ``subject``."""
    consumer = f"{stream.name}.{durable}"
    return (
        f"$JS.API.CONSUMER.INFO.{consumer}",
        f"$JS.API.CONSUMER.CREATE.{consumer}.{subject}",
        f"$JS.API.CONSUMER.MSG.NEXT.{consumer}",
        f"$JS.ACK.{consumer}.>",
    )


def identity(name: str, *rights: Iterable[str]) -> Identity:
    """A user who may publish ``rights`` and subscribe to its own inbox."""
    return Identity(name, publish=tuple(chain(*rights)), subscribe=(f"{inbox_of(name)}.>",))


USERS_SERVICE = identity("users-service", publishes(USERS))
ORDERS_SERVICE = identity(
    "orders-service",
    publishes(ORDERS),
    consumes(USERS, "orders-service-user-deletions", "users.events.user.deleted"),
)
WEBHOOKS_DISPATCHER = identity(
    "webhooks-dispatcher",
    consumes(ORDERS, "webhooks-dispatcher-orders", "orders.events.>"),
    consumes(USERS, "webhooks-dispatcher-users", "users.events.>"),
)
SERVICES = (USERS_SERVICE, ORDERS_SERVICE, WEBHOOKS_DISPATCHER)
"""Every process that connects to NATS in a deployment (the webhooks API does not)."""

INSPECTOR = identity("inspector", ("$JS.API.STREAM.INFO.*", "$JS.API.STREAM.MSG.GET.*"))
"""Development only (``make run``, the test kit): reads any stream's messages, one by one,
and changes nothing; never in a deployment's config."""

DEVELOPMENT = (*SERVICES, INSPECTOR)


def server_config(identities: Sequence[Identity], *, monitoring: str | None = None) -> str:
    """nats-server's config: the users and their permissions, each user's public NKey read
    from the environment variable it names, and the monitoring endpoint if any. Ports,
    JetStream and its store are the command line's."""
    lines = [
        "# nats-server: who may connect and what each may do. Rendered by",
        "# api_shared.events.access (python -m api_shared.events.access); do not edit.",
        "# Each user is known by its public NKey, read from the environment variable named.",
    ]
    if monitoring is not None:
        lines.append(f"http: {json.dumps(monitoring)}")
    lines += ["authorization {", "  users = ["]
    for user in identities:
        lines += [
            f"    # {user.name}",
            "    {",
            f"      nkey: ${user.nkey_variable}",
            "      permissions {",
            *_allow("publish", user.publish),
            *_allow("subscribe", user.subscribe),
            "      }",
            "    }",
        ]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _allow(direction: str, subjects: Sequence[str]) -> list[str]:
    return [
        f"        {direction} {{ allow: [",
        *(f"          {json.dumps(subject)}," for subject in subjects),
        "        ] }",
    ]


def deployment_config() -> str:
    """The config of the deployments' nats-server: ``deploy/nats/nats.conf``."""
    return server_config(SERVICES, monitoring=MONITORING)


if __name__ == "__main__":
    print(deployment_config(), end="")
