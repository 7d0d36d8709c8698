"""books-graphql settings, from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from api_shared.settings import PlatformSettings, ServiceSettings
from books_graphql.paging import MAX_PAGE_SIZE

PACKAGE = Path(__file__).parent
DEFAULT_SEED_FILE = PACKAGE / "data" / "books.json"
# Ten of booksConnection's largest pages: the ten lists a document may select can each be
# a full page. The whole catalog (`books`, one per operation) is not charged when its plan
# answers it: it is the operator's, as large as it is (request_work).
DEFAULT_MAX_RESULT_ROWS = 10 * MAX_PAGE_SIZE


class DatabaseSettings(PlatformSettings):
    """books-graphql's database."""

    family: ClassVar[str] = "Common and databases"

    database_url: str = Field(
        default="sqlite://var/books.sqlite3",
        validation_alias="BOOKS_DATABASE_URL",
        description="its database; or a `postgres://` URL",
    )


class PortSettings(PlatformSettings):
    """Where books-graphql listens."""

    family: ClassVar[str] = "Ports, upstreams and callers"

    port: int = Field(
        default=4000,
        validation_alias="BOOKS_PORT",
        description="GraphQL at `/` and `/graphql`; the GraphiQL sandbox for browsers at `/`",
    )


class CatalogSettings(PlatformSettings):
    """The catalog: its seed, the bounds on a request's work, its caches, the sandbox."""

    family: ClassVar[str] = "Books"

    # Inserted if absent at every start-up (a no-op after the first); empty disables seeding.
    seed_file: Path | None = Field(
        default=DEFAULT_SEED_FILE,
        validation_alias="BOOKS_SEED_FILE",
        description="books inserted if absent at every start; empty disables seeding",
        json_schema_extra={
            "shown_default": f"the packaged `{DEFAULT_SEED_FILE.relative_to(PACKAGE)}`"
        },
    )

    # Bounded work: documents above these are refused before they are parsed or executed.
    max_query_bytes: int = Field(
        default=16_384,
        gt=0,
        validation_alias="BOOKS_MAX_QUERY_BYTES",
        description="larger documents are refused before parsing",
    )
    max_query_depth: int = Field(
        default=15,
        gt=0,
        validation_alias="BOOKS_MAX_QUERY_DEPTH",
        description="deeper documents are refused (GraphiQL's introspection is 15); brackets "
        "of any kind may nest 4 times this",
    )
    max_query_fields: int = Field(
        default=500,
        gt=0,
        validation_alias="BOOKS_MAX_QUERY_FIELDS",
        description="fields + aliases (fragments counted where spread)",
    )
    # Lists of books (books, booksConnection; aliases and fragment spreads count) a document
    # may select, and the rows they may return together beyond the whole catalog's one
    # list (an operation selects `books` under one name at most: limits): with these, one
    # request produces at most the catalog and BOOKS_MAX_RESULT_ROWS books (request_work).
    max_query_list_fields: int = Field(
        default=10,
        gt=0,
        validation_alias="BOOKS_MAX_QUERY_LIST_FIELDS",
        description="lists of books (`books`, `booksConnection`) one document may select, "
        "aliases included; `books` itself under one name per operation",
    )
    max_result_rows: int = Field(
        default=DEFAULT_MAX_RESULT_ROWS,
        gt=0,
        validation_alias="BOOKS_MAX_RESULT_ROWS",
        description="books one request's lists may return together beyond the whole catalog's "
        "one (`books` is every book, whatever the catalog's size); with the above, the bound "
        "on one request's work ([docs/api.md](api.md#bounded-work))",
        json_schema_extra={"default_note": f"ten pages of {MAX_PAGE_SIZE}"},
    )
    query_cache_size: int = Field(
        default=512,
        gt=0,
        validation_alias="BOOKS_QUERY_CACHE_SIZE",
        description="parsed and validated documents kept (LRU)",
    )
    # The catalog is kept in memory and its version read at most this often: an answer
    # lags a finished import by at most this (plans.snapshot). The snapshot is reloaded
    # after max age whatever the version says (a safety net).
    catalog_check_ms: float = Field(
        default=5.0,
        ge=0,
        validation_alias="BOOKS_CATALOG_CHECK_MS",
        description="the catalog version is read at most this often: an import is served by "
        "every replica at most this long after it finished",
    )
    catalog_max_age_s: float = Field(
        default=60.0,
        gt=0,
        validation_alias="BOOKS_CATALOG_MAX_AGE_S",
        description="the in-memory catalog is reloaded after this long whatever its version "
        "(a safety net)",
    )
    # Successful query responses are replayed until the catalog changes, and at most this
    # long (a safety net; 0 turns the cache off): see response_cache. The budget bounds the
    # memory they take.
    response_cache_ttl_s: float = Field(
        default=60.0,
        ge=0,
        validation_alias="BOOKS_RESPONSE_CACHE_TTL_S",
        description="successful answers replayed until the catalog changes, at most this long; "
        "`0` turns it off",
    )
    response_cache_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=0,
        validation_alias="BOOKS_RESPONSE_CACHE_BYTES",
        description="memory budget of the response cache",
    )

    # GET answers: Cache-Control max-age (with an ETag; see http.cache_headers).
    http_cache_max_age_s: int = Field(
        default=0,
        ge=0,
        validation_alias="BOOKS_HTTP_CACHE_MAX_AGE_S",
        description="`Cache-Control: public, max-age=N` of successful GET answers (with an "
        "`ETag`; `If-None-Match` → 304)",
    )
    # Automatic persisted queries remembered per replica (0 turns the protocol off).
    persisted_queries: int = Field(
        default=1000,
        ge=0,
        validation_alias="BOOKS_PERSISTED_QUERIES",
        description="automatic persisted queries (Apollo's protocol) remembered per replica; "
        "`0` turns them off",
    )

    # Where the sandbox loads graphiql, react and react-dom from: empty means the public CDN
    # (pinned versions, with Subresource Integrity); else a base URL laid out like
    # ``node_modules`` (``<url>/graphiql/graphiql.min.js``, ``<url>/react/umd/...``).
    graphiql_assets_url: str | None = Field(
        default=None,
        validation_alias="BOOKS_GRAPHIQL_ASSETS_URL",
        description="self-hosted base URL of the graphiql/react/react-dom packages",
        json_schema_extra={"shown_default": "unset (a CDN, pinned with integrity hashes)"},
    )
    # GraphQL introspection (__schema, __type) and the GraphiQL sandbox page; unset (or
    # empty), each is on in development and off in production (APP_ENV): a production
    # service does not hand its schema and a query console to whoever asks.
    introspection: bool | None = Field(
        default=None,
        validation_alias="BOOKS_INTROSPECTION",
        description="`true`/`false`: GraphQL introspection (`__schema`, `__type`); off, such a "
        "query is a GraphQL error `GRAPHQL_VALIDATION_FAILED`",
        json_schema_extra={"shown_default": "unset: on in development, off in production"},
    )
    graphiql: bool | None = Field(
        default=None,
        validation_alias="BOOKS_GRAPHIQL",
        description="`true`/`false`: the GraphiQL sandbox for browsers; off, a browser gets "
        "the JSON answer any client gets",
        json_schema_extra={"shown_default": "unset: on in development, off in production"},
    )


# books-graphql's own families come first: their fields override ServiceSettings' (``port``).
class Settings(DatabaseSettings, PortSettings, CatalogSettings, ServiceSettings):
    """books-graphql's settings; whether introspection and the sandbox are on depends on
    ``APP_ENV`` when they are unset."""

    @field_validator("seed_file", "graphiql_assets_url", "introspection", "graphiql", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def introspection_on(self) -> bool:
        return self.introspection if self.introspection is not None else not self.is_production

    @property
    def graphiql_on(self) -> bool:
        return self.graphiql if self.graphiql is not None else not self.is_production
