"""Hot queries without the query builder: SQL that Tortoise builds once per query shape,
run again with new parameters on the ORM's own connection.

Building a queryset's SQL, and the model instances of its rows, cost more than PostgreSQL
took to run it: on the users page it was about half of the request (docs/benchmarks.md).
The SQL is still Tortoise's, for whichever database the service runs on; only the building
is skipped. A shape's parameters must come out in the order its caller lists them, which is
checked when the shape is first built.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import cache
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.fields import BooleanField, DatetimeField, Field, UUIDField
from tortoise.models import Model
from tortoise.queryset import QuerySet, ValuesQuery

from api_shared.transactions import pinned_connection

Query = QuerySet[Any] | ValuesQuery[Any]
Row = Mapping[str, Any]
# What asyncpg gives for these fields and SQLite does not (text, 0/1): ``fetch_values``
# makes SQLite's the same, so a row reads alike on either database.
_NOT_NATIVE_ON_SQLITE = (DatetimeField, UUIDField, BooleanField)


def parameterized(query: Query) -> tuple[str, list[Any]]:
    """The SQL Tortoise sends for ``query``, with its parameters."""
    query.sql()  # builds query.query
    sql, values = query.query.get_parameterized_sql()
    return sql, list(values)


class Statements:
    """The SQL of each query shape a caller names, built on first use and kept (per
    database kind), and run with the values of each call."""

    def __init__(self) -> None:
        self._sql: dict[tuple[str, Hashable], str] = {}

    async def values(
        self, model: type[Model], shape: Hashable, values: list[Any], build: Callable[[], Query]
    ) -> Sequence[Row]:
        """The rows as mappings of column to value, valued as asyncpg gives them (asyncpg's
        own records on PostgreSQL; no instances).

        ``build`` makes the shape's queryset with these very ``values``; it runs only the
        first time, and Tortoise's parameters must then equal ``values``.
        """
        client = model._meta.db
        rows = await _fetch(client, self._statement(client, shape, values, build), values)
        if client.capabilities.dialect == "postgres":
            return rows
        converters = _sqlite_converters(model)
        return [
            {key: _converted(converters.get(key), value) for key, value in dict(row).items()}
            for row in rows
        ]

    async def instances(
        self,
        model: type[Model],
        shape: Hashable,
        values: list[Any],
        build: Callable[[], Query],
        *related: tuple[type[Model], str],
    ) -> list[tuple[Model, ...]]:
        """The rows as instances: ``model``'s, then one of each ``related`` model whose
        columns follow, named ``<prefix>.<column>`` (a ``select_related`` query's SQL)."""
        client = model._meta.db
        rows = await _fetch(client, self._statement(client, shape, values, build), values)
        found = []
        for row in rows:
            columns = dict(row)
            instances = [
                model._init_from_db(**{key: columns[key] for key in model._meta.db_fields})
            ]
            for other, prefix in related:
                own = {key: columns[f"{prefix}.{key}"] for key in other._meta.db_fields}
                instances.append(other._init_from_db(**own))
            found.append(tuple(instances))
        return found

    def _statement(
        self,
        client: BaseDBAsyncClient,
        shape: Hashable,
        values: list[Any],
        build: Callable[[], Query],
    ) -> str:
        key = (str(client.capabilities.dialect), shape)
        sql = self._sql.get(key)
        if sql is None:
            sql, built = parameterized(build())
            if built != values:
                raise RuntimeError(f"the query {shape!r} takes {built!r}, not {values!r}")
            self._sql[key] = sql
        return sql


async def _fetch(client: BaseDBAsyncClient, sql: str, values: list[Any]) -> Sequence[Row]:
    connection = pinned_connection(client)
    if connection is not None:  # one_connection's: asyncpg itself, without Tortoise's layers
        records: Sequence[Row] = await connection.fetch(sql, *values)
        return records
    _, rows = await client.execute_query(sql, values)
    return rows


def _converted(field: Field[Any] | None, value: Any) -> Any:
    return value if field is None or value is None else field.to_python_value(value)


@cache  # a model's fields are fixed once Tortoise is initialised
def _sqlite_converters(model: type[Model]) -> dict[str, Field[Any]]:
    return {
        name: field
        for name, field in model._meta.fields_map.items()
        if isinstance(field, _NOT_NATIVE_ON_SQLITE)
    }
