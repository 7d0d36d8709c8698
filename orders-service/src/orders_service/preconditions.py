"""ETags and ``If-Match`` for orders (RFC 9110 §8.8.3, §13.1.1).

The ETag is strong, ``"<order id>-<version>"``: the version grows on every change, so the tag
changes exactly when the representation's content does, and naming the id means a tag copied
from another order never matches. It is strong because ``If-Match`` compares strongly: a weak
tag (``W/"..."``) in ``If-Match`` never matches, as the RFC requires.

An ``If-Match`` is read before anything else is done: ``*`` or a comma-separated list of
entity tags, strong or weak (empty list elements are ignored, RFC 9110 §5.6.1.2). Anything
else, an empty header included, is malformed: 400 VALIDATION_FAILED naming the header, not a
412, since no state of the order could ever make it match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from api_shared.errors import PreconditionFailedError, ValidationFailedError

HEADER = "If-Match"
MALFORMED = "must be * or a comma-separated list of entity tags"
# Room for a dozen of this service's tags (58 characters each); a longer list is no
# precondition a client means, only work for the parser (docs/api.md#limits).
MAX_LENGTH = 1024
# One list element: an entity tag, or nothing (an empty element), then a comma or the end.
# (A comma may sit inside a tag's quotes, so the value cannot simply be split on commas.)
_ELEMENT = re.compile(r'[ \t]*(?:(W/)?"([\x21\x23-\x7e\x80-\xff]*)")?[ \t]*(?:,|\Z)')
# An If-Match that can match, for the API documentation: ``*`` or a comma-separated list of
# strong tags (``parse_if_match`` stays the rule; it also takes weak tags, which never match,
# and empty list elements, and the documentation leaves out obs-text).
_STRONG_TAG = r'"[!#-~]*"'
IF_MATCH_PATTERN = rf"^(\*|{_STRONG_TAG}([ \t]*,[ \t]*{_STRONG_TAG})*)$"


def etag(order_id: UUID, version: int) -> str:
    return f'"{order_id}-{version}"'


@dataclass(frozen=True, slots=True)
class IfMatch:
    """A well-formed ``If-Match``: ``*``, or the strong tags it lists (weak ones never match)."""

    any: bool
    strong_tags: frozenset[str]

    def allows(self, current: str) -> bool:
        """Whether a request with this header may change a resource tagged ``current``."""
        return self.any or current in self.strong_tags


def require_match(if_match: IfMatch | None, order_id: UUID, version: int) -> None:
    """412 PRECONDITION_FAILED unless ``if_match`` is absent or allows this version's tag."""
    if if_match is not None and not if_match.allows(etag(order_id, version)):
        raise PreconditionFailedError()


def parse_if_match(lines: Iterable[str]) -> IfMatch | None:
    """The header's condition (its lines joined, RFC 9110 §5.3); None when it is absent.

    Raises VALIDATION_FAILED when it is neither ``*`` nor a list of at least one entity tag.
    """
    received = list(lines)
    if not received:
        return None
    value = ", ".join(received).strip(" \t")
    if len(value) > MAX_LENGTH:
        message = f"must be at most {MAX_LENGTH} characters"
        raise ValidationFailedError(f"{HEADER} {message}", fields={HEADER: message})
    if value == "*":
        return IfMatch(any=True, strong_tags=frozenset())
    tags: set[str] = set()
    seen, position = 0, 0
    while position < len(value):
        match = _ELEMENT.match(value, position)
        if match is None or match.end() == position:
            raise _malformed()
        weak, opaque = match.groups()
        if opaque is not None:
            seen += 1
            if not weak:
                tags.add(f'"{opaque}"')
        position = match.end()
    if seen == 0:
        raise _malformed()
    return IfMatch(any=False, strong_tags=frozenset(tags))


def _malformed() -> ValidationFailedError:
    return ValidationFailedError(f"{HEADER} {MALFORMED}", fields={HEADER: MALFORMED})
