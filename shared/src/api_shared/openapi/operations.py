"""Whole operations, documented as every service's routes of one kind are.

A route says what is its own (its id, tag, item model, path ids, errors); these add the rest:
``list_operation`` a page of items, ``get_operation`` one item, ``change_operation`` one item
changed by a JSON body; each with the bearer token and the contract's errors. A route of
another kind stacks the decorators of ``responses`` and ``parameters`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import Parameter, RequestBody
from sanic_ext.extensions.openapi.types import Schema

from api_shared.openapi.parameters import Parameters, page_parameters
from api_shared.openapi.responses import bearer_auth, error_responses, response
from api_shared.openapi.shapes import ItemEnvelope, PageEnvelope
from api_shared.paging import allowed_sorts

F = TypeVar("F", bound=Callable[..., Any])


def list_operation(
    operation: str,
    tag: str,
    item: type[BaseModel],
    description: str,
    *,
    sorts: Sequence[str],
    default_sort: str,
    filters: Mapping[str, Schema] | None = None,
    path: Sequence[Parameter] = (),
    errors: Iterable[int] = (),
) -> Callable[[F], F]:
    """Document a list operation as every list route is: a bearer token, the ``path`` ids and
    the page parameters, a page of ``item`` as its 200 (``description``), and 400 (BAD_SORT,
    BAD_FILTER) with the ``errors`` the route adds."""
    parameters: Parameters = [*path, *page_parameters(allowed_sorts(sorts), default_sort, filters)]
    return _stacked(
        openapi.definition(operation=operation, tag=tag, parameter=parameters),
        # The item model is a value here, which mypy does not take as a type argument.
        response(200, PageEnvelope[item], description),  # type: ignore[valid-type]
        error_responses(400, *errors),
        bearer_auth(),
    )


def get_operation(
    operation: str,
    tag: str,
    item: type[BaseModel],
    description: str,
    *,
    path: Sequence[Parameter] = (),
    headers: Mapping[str, Any] | None = None,
    errors: Iterable[int] = (),
) -> Callable[[F], F]:
    """Document the read of one item: a bearer token, the ``path`` ids, ``item`` as its 200
    (``description``, with ``headers``: its ETag, say), and the ``errors`` the route adds."""
    return _stacked(
        openapi.definition(operation=operation, tag=tag, parameter=list(path)),
        response(200, ItemEnvelope[item], description, headers=headers),  # type: ignore[valid-type]
        error_responses(*errors),
        bearer_auth(),
    )


def change_operation(
    operation: str,
    tag: str,
    item: type[BaseModel],
    description: str,
    *,
    body: RequestBody,
    path: Sequence[Parameter] = (),
    parameters: Sequence[Parameter] = (),
    headers: Mapping[str, Any] | None = None,
    errors: Iterable[int] = (),
) -> Callable[[F], F]:
    """Document a change of one item by a JSON ``body`` (PUT, PATCH): a bearer token, the
    ``path`` ids and other ``parameters`` (a precondition header, say), the changed ``item`` as
    its 200 (``description``, with ``headers``), the errors of any body (400, 413, 415) and the
    ``errors`` the route adds."""
    return _stacked(
        openapi.definition(operation=operation, tag=tag, parameter=[*path, *parameters], body=body),
        response(200, ItemEnvelope[item], description, headers=headers),  # type: ignore[valid-type]
        error_responses(*errors, body=True),
        bearer_auth(),
    )


def _stacked(*documents: Callable[[F], F]) -> Callable[[F], F]:
    """The decorators as one, applied as they would be stacked in this order over a handler."""

    def document(func: F) -> F:
        for step in reversed(documents):  # the innermost, the last listed, first
            func = step(func)
        return func

    return document
