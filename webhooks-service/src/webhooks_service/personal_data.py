"""Personal data in deliveries: whose it is, and the event without it.

A delivery keeps the event it sends, byte for byte; a user's event carries their name and
email, an order's event their user id, items and note. So each delivery records the user
whose data its event carries (``concerned_user``), and when users-service says that user was
deleted, every delivery of theirs is redacted (``redacted``): the event keeps the attributes
that say what happened to which resource (``specversion``, ``id``, ``source``, ``type``,
``subject``, ``time``, ``sequence``) and loses its ``data`` (and ``datacontenttype``). A
pending delivery then goes out redacted; a delivered one stays listed, redacted.

``users.user.deleted`` itself concerns nobody here: its data is the user's id, its subject
already, and receivers need it to delete their own copies.
"""

from __future__ import annotations

from typing import Any

import orjson

USER_PREFIX = "users."
ORDER_PREFIX = "orders."
USER_DELETED = "users.user.deleted"
KEPT_ATTRIBUTES = ("specversion", "id", "source", "type", "subject", "time", "sequence")


def concerned_user(event_type: str, subject: str, document: dict[str, Any]) -> str | None:
    """The id of the user whose personal data an event carries; None: nobody's."""
    if event_type == USER_DELETED:
        return None
    if event_type.startswith(USER_PREFIX):
        return subject
    if event_type.startswith(ORDER_PREFIX):
        data = document.get("data")
        user_id = data.get("userId") if isinstance(data, dict) else None
        return user_id if isinstance(user_id, str) and 0 < len(user_id) <= 255 else None
    return None


def redacted(payload: str) -> str:
    """The event of ``payload`` without its data (compact JSON)."""
    try:
        document = orjson.loads(payload)
    except orjson.JSONDecodeError:
        document = None
    if not isinstance(document, dict):
        return "{}"
    return orjson.dumps(
        {name: document[name] for name in KEPT_ATTRIBUTES if name in document}
    ).decode()
