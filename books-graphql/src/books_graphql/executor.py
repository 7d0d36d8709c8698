"""The catalog's GraphQL engine: one Tartiflette engine, bounded and cached documents.

Tartiflette registers resolvers and schemas in a process-wide registry keyed by schema name,
and refuses a second registration under the same name. Each executor therefore cooks its
engine under a name of its own and registers its resolvers (bound to its repository) at that
moment: one engine per process in production, and as many as tests need in one process.

Every document goes through ``prepare`` once: size, depth and field limits (``limits``),
then Tartiflette's parse and validation (and, with introspection switched off, the refusal of
``__schema`` and ``__type``: ``introspection_switch``); the outcome, failures included, is kept in a
bounded LRU cache keyed by the query text, which the engine itself reads through its
``query_cache_decorator`` hook. A client repeating a query pays one dictionary lookup.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from tartiflette import Engine, Resolver
from tartiflette.schema.registry import SchemaRegistry
from tartiflette.types.exceptions.tartiflette import GraphQLSyntaxError, TartifletteError

from api_shared.error_handler import is_database_down
from api_shared.errors import UnavailableError
from books_graphql.introspection_switch import introspection_refusal
from books_graphql.limits.bounds import LimitExceeded, QueryLimits
from books_graphql.limits.check import check_limits

SCHEMA_FILE = Path(__file__).parent / "schema.graphql"
# Extends Tartiflette's introspection types to those of today's clients (see the module).
INTROSPECTION_MODULE = "books_graphql.introspection"

ResolverFunction = Callable[[Any, dict[str, Any], Any, Any], Awaitable[Any]]

logger = logging.getLogger(__name__)

# The request being executed, for the log line of a masked error (Tartiflette's error
# coercer is not given the execution context).
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
# What the resolvers of the current execution raised, collected by the error coercer.
_resolver_failures: ContextVar[list[BaseException] | None] = ContextVar(
    "resolver_failures", default=None
)

_engine_numbers = itertools.count(1)

INTERNAL_ERROR_MESSAGE = "Internal server error"
NUL_MESSAGE = "The query contains a NUL character (U+0000), which GraphQL documents may not."


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A query after limits, parsing and validation: ready to execute, or its errors."""

    document: Any  # Tartiflette's DocumentNode, None when refused or invalid
    errors: list[TartifletteError] | None
    operations: Mapping[str | None, str]  # name (None if anonymous) → query/mutation/...
    parsed: bool  # the document is syntactically valid (its operation types are known)

    def operation_type(self, operation_name: str | None) -> str | None:
        """The type of the operation that would run, None when it cannot be determined."""
        if not self.parsed:
            return None
        if operation_name is None:
            if len(self.operations) == 1:
                return next(iter(self.operations.values()))
            return None
        return self.operations.get(operation_name)


@dataclass(frozen=True, slots=True)
class GraphQLResult:
    """A GraphQL response body, and whether the request failed before execution.

    Request errors (parse, validation, limits, operation selection, variable values) have
    no ``data`` entry, per the GraphQL-over-HTTP specification.
    """

    body: dict[str, Any]
    is_request_error: bool


class GraphQLExecutor:
    """Prepares and executes GraphQL documents with one cooked Tartiflette engine."""

    def __init__(
        self, engine: Engine, schema_name: str, limits: QueryLimits, *, introspection: bool = True
    ) -> None:
        self.engine = engine
        self.schema_name = schema_name
        self.limits = limits
        self.introspection = introspection  # False: __schema and __type are refused
        self._schema: Any = None
        self._parse_and_validate: Callable[[str, Any], tuple[Any, Any]] | None = None
        self.prepare: Callable[[str], PreparedDocument] = self._prepare

    @classmethod
    async def build(
        cls,
        resolvers: Mapping[str, ResolverFunction],
        *,
        limits: QueryLimits,
        cache_size: int,
        introspection: bool = True,
    ) -> GraphQLExecutor:
        """Cook an engine for the schema file with ``resolvers`` ("Type.field" → coroutine);
        ``introspection`` False refuses documents that select ``__schema`` or ``__type``."""
        schema_name = f"books-graphql-{next(_engine_numbers)}"
        for field_name, resolver in resolvers.items():
            # Sequential: one database connection serves a request's root fields in turn
            # anyway, and a task per field costs more than it saves.
            Resolver(
                field_name,
                schema_name=schema_name,
                list_concurrently=False,
                parent_concurrently=False,
            )(resolver)
        engine = Engine(
            sdl=str(SCHEMA_FILE),
            schema_name=schema_name,
            modules=[INTROSPECTION_MODULE],
            error_coercer=coerce_error,
            json_loader=orjson.loads,
            # Books are plain objects in memory: completing them one after the other is
            # faster than a task per list item or per field.
            coerce_list_concurrently=False,
            coerce_parent_concurrently=False,
            sdl_file_encoding="utf-8",
        )
        executor = cls(engine, schema_name, limits, introspection=introspection)
        executor.prepare = functools.lru_cache(maxsize=max(cache_size, 1))(executor._prepare)
        await engine.cook(query_cache_decorator=executor._install_cache)
        executor._schema = SchemaRegistry.find_schema(schema_name)
        return executor

    def _install_cache(
        self, parse_and_validate: Callable[[str, Any], tuple[Any, Any]]
    ) -> Callable[[str, Any], tuple[Any, Any]]:
        """The engine's ``query_cache_decorator``: its parsing goes through ``prepare``."""
        self._parse_and_validate = parse_and_validate

        def prepared(query: str, schema: Any) -> tuple[Any, Any]:
            document = self.prepare(query)
            return document.document, document.errors

        return prepared

    def _prepare(self, query: str) -> PreparedDocument:
        shape = check_limits(query, self.limits)
        if isinstance(shape, LimitExceeded):
            return _refused(shape.message, shape.code)
        if "\x00" in query:
            # The parser reads a C string: it would parse, and run, only what precedes a NUL.
            return _refused(NUL_MESSAGE, "GRAPHQL_PARSE_FAILED")
        assert self._parse_and_validate is not None, "the engine is not cooked"
        document, errors = self._parse_and_validate(query, self._schema)
        syntax_error = bool(errors) and any(isinstance(e, GraphQLSyntaxError) for e in errors)
        for error in errors or ():
            if isinstance(error, TartifletteError) and "code" not in error.extensions:
                code = "GRAPHQL_PARSE_FAILED" if syntax_error else "GRAPHQL_VALIDATION_FAILED"
                error.extensions = {"code": code, **error.extensions}
        if not errors and not self.introspection:
            refusal = introspection_refusal(document)
            if refusal is not None:
                document, errors = None, [refusal]
        return PreparedDocument(
            document=document,
            errors=errors,
            operations=shape.operations,
            parsed=not syntax_error,
        )

    async def execute(
        self,
        prepared: PreparedDocument,
        query: str,
        *,
        variables: dict[str, Any] | None = None,
        operation_name: str | None = None,
        request_id: str | None = None,
    ) -> GraphQLResult:
        """Execute a prepared document (or render its errors)."""
        token = current_request_id.set(request_id)
        failures: list[BaseException] = []
        failures_token = _resolver_failures.set(failures)
        try:
            body: dict[str, Any] = await self.engine.execute(
                query,
                operation_name=operation_name,
                context={"request_id": request_id},
                variables=variables,
            )
        finally:
            current_request_id.reset(token)
            _resolver_failures.reset(failures_token)
        if any(is_database_down(failure) for failure in failures):
            # An outage, not an answer: 503 with Retry-After, never a 200 hiding it.
            raise UnavailableError("The catalog's database is unavailable; try again shortly.")
        errors: list[dict[str, Any]] = body.get("errors") or []
        # Errors before execution (the operation cannot be chosen, variables do not coerce)
        # leave data null and carry no path; an execution error always has one.
        is_request_error = prepared.errors is not None or (
            body.get("data") is None
            and bool(errors)
            and all(error.get("path") is None for error in errors)
        )
        if is_request_error:
            body = {"errors": [_without_path(error) for error in errors]}
        return GraphQLResult(body=body, is_request_error=is_request_error)


def _refused(message: str, code: str) -> PreparedDocument:
    error = TartifletteError(message, extensions={"code": code})
    return PreparedDocument(document=None, errors=[error], operations={}, parsed=False)


def _without_path(error: dict[str, Any]) -> dict[str, Any]:
    """A request error is about the document, not about a response field."""
    return {key: value for key, value in error.items() if key != "path"}


async def coerce_error(exception: Exception, error: dict[str, Any]) -> dict[str, Any]:
    """Tartiflette's error coercer: mask unexpected failures, tidy the rest.

    A resolver that raises anything but a GraphQL error is a bug or an outage: the client
    reads "Internal server error", the log gets the traceback and the request id.
    """
    if _is_unexpected(exception):
        original = getattr(exception, "original_error", None) or exception
        failures = _resolver_failures.get()
        if failures is not None:
            failures.append(original)
        logger.error(
            "resolver failed",
            exc_info=(type(original), original, original.__traceback__),
            extra={"requestId": current_request_id.get(), "path": error.get("path")},
        )
        error = {
            "message": INTERNAL_ERROR_MESSAGE,
            "path": error.get("path"),
            "locations": error.get("locations"),
            "extensions": {"code": "INTERNAL_SERVER_ERROR"},
        }
    # The specification wants no empty ``locations`` and no null ``path``.
    return {key: value for key, value in error.items() if value not in (None, [])}


def _is_unexpected(exception: Exception) -> bool:
    if not isinstance(exception, TartifletteError):
        return True
    # Tartiflette wraps what a resolver raised in a plain TartifletteError whose original
    # error is not a GraphQL error; its own errors (syntax, validation, coercion of
    # variables) are subclasses or carry no foreign original error.
    original = exception.original_error
    return (
        type(exception) is TartifletteError
        and original is not None
        and not isinstance(original, TartifletteError)
    )
