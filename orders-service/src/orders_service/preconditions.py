"""ETags and ``If-Match`` for orders (RFC 9110 §8.8.3, §13.1.1).

The ETag is strong, ``"<order id>-<version>"``: the version grows on every change, so the tag
changes exactly when the representation's content does, and naming the id means a tag copied
from another order never matches. It is strong because ``If-Match`` compares strongly: a weak
tag (``W/"..."``) in ``If-Match`` never matches, as the RFC requires.
"""

from __future__ import annotations

import re
from uuid import UUID

_ENTITY_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)')
# An If-Match that can match, for the API documentation: ``*`` or a comma-separated list of
# strong tags (``if_match_allows`` stays the rule; a weak tag never matches, and the
# documentation leaves out obs-text).
_STRONG_TAG = r'"[!#-~]*"'
IF_MATCH_PATTERN = rf"^(\*|{_STRONG_TAG}([ \t]*,[ \t]*{_STRONG_TAG})*)$"


def etag(order_id: UUID, version: int) -> str:
    return f'"{order_id}-{version}"'


def if_match_allows(if_match: str | None, current: str) -> bool:
    """Whether a request with this ``If-Match`` header may change a resource tagged ``current``.

    No header allows; ``*`` allows (the resource exists); otherwise one of the listed strong
    tags must equal ``current``. A malformed header allows nothing.
    """
    if if_match is None:
        return True
    value = if_match.strip()
    if value == "*":
        return True
    position = 0
    while position < len(value):
        match = _ENTITY_TAG.match(value, position)
        if match is None or match.end() == position:
            return False
        weak, opaque = match.groups()
        if not weak and f'"{opaque}"' == current:
            return True
        position = match.end()
    return False
