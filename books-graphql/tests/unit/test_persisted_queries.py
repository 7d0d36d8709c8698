"""Apollo's persisted-query protocol, rule by rule (the HTTP exchange: integration tests)."""

from __future__ import annotations

import hashlib

from books_graphql.http.cache_headers import etag_of, not_modified
from books_graphql.http.persisted_queries import (
    BAD_VERSION,
    HASH_MISMATCH,
    NOT_FOUND,
    NOT_SUPPORTED,
    PersistedQueries,
    PersistedQuery,
)

QUERY = "{ books { title } }"
DIGEST = hashlib.sha256(QUERY.encode()).hexdigest()


def extension(digest: str = DIGEST, version: int = 1) -> dict[str, object]:
    return {"persistedQuery": {"version": version, "sha256Hash": digest}}


def test_a_request_without_the_extension_is_not_a_persisted_query() -> None:
    assert PersistedQueries(10).resolve(QUERY, None) is None
    assert PersistedQueries(10).resolve(QUERY, {"other": 1}) is None


def test_a_hash_is_unknown_until_registered_then_stands_for_its_query() -> None:
    store = PersistedQueries(10)

    unknown = store.resolve(None, extension())
    with_query = store.resolve(QUERY, extension())
    assert isinstance(with_query, PersistedQuery)
    assert with_query.register_as is not None
    store.register(with_query.register_as, with_query.query)
    known = store.resolve(None, extension(DIGEST.upper()))

    assert unknown is NOT_FOUND
    assert known == PersistedQuery(QUERY, register_as=None)


def test_a_wrong_hash_or_version_is_refused() -> None:
    store = PersistedQueries(10)

    assert store.resolve(QUERY, extension("0" * 64)) is HASH_MISMATCH
    assert store.resolve(QUERY, extension(version=2)) is BAD_VERSION


def test_the_store_is_bounded_least_recently_used_first() -> None:
    store = PersistedQueries(2)
    for name in ("a", "b", "c"):
        store.register(name * 64, name)

    assert len(store) == 2
    assert store.resolve(None, extension("a" * 64)) is NOT_FOUND


def test_size_zero_turns_the_protocol_off() -> None:
    assert PersistedQueries(0).resolve(None, extension()) is NOT_SUPPORTED


def test_if_none_match_compares_weakly_and_accepts_lists_and_star() -> None:
    etag = etag_of(b"body", "application/json")

    assert not_modified(etag, etag)
    assert not_modified(f'"x", W/{etag}', etag)
    assert not_modified("*", etag)
    assert not not_modified('"x"', etag)
    assert not not_modified(None, etag)
    assert etag != etag_of(b"body", "application/graphql-response+json")
