"""HTTP caching of GraphQL queries sent with GET: ``ETag``, ``Cache-Control``, 304.

A query sent with GET (short with a persisted-query hash, see persisted_queries) is an
ordinary cacheable URL: browsers, CDNs and proxies keep it for ``BOOKS_HTTP_CACHE_MAX_AGE_S``
(``Cache-Control: public, max-age=N``; 0 by default, so caches revalidate every time) and
then revalidate with ``If-None-Match``, answered 304 with no body when nothing changed.

- Only successful answers are cacheable; an answer with errors is ``no-store``. POST
  answers get neither header (POST responses are not reused by HTTP caches).
- The ETag is strong and names the exact bytes *and* media type (the same body served as
  ``application/json`` and ``application/graphql-response+json`` is two representations,
  and the responses carry ``Vary: Accept``).
"""

from __future__ import annotations

import hashlib

NO_STORE = "no-store"


def etag_of(body: bytes, media_type: str) -> str:
    digest = hashlib.blake2b(body, digest_size=16)
    digest.update(media_type.encode())
    return f'"{digest.hexdigest()}"'


def cache_control(max_age_s: int) -> str:
    return f"public, max-age={max_age_s}"


def not_modified(if_none_match: str | None, etag: str) -> bool:
    """``If-None-Match`` names ``etag`` (weak comparison, as RFC 9110 wants for GET)."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return any(
        candidate.strip().removeprefix("W/") == opaque for candidate in if_none_match.split(",")
    )
