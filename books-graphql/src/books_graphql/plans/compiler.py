"""Query plans: a validated document compiled once, then run over the in-memory catalog.

Tartiflette walks the document and calls a coroutine per field for every request (about
14 µs a field). A plan does that walk once per document (the way graphql-jit compiles
graphql-js queries): the selections become a tree with fragments inlined, and the only
thing left for run time is what variables decide (``@skip``/``@include`` and ``book(id:)``).
For each combination of those conditions the fields are collected and merged once (the
specification's CollectFields), into *steps*; running a step over a snapshot builds a
book's object from its precomputed row with code generated for the selection.

``compile_plan`` raises ``UnsupportedError`` for anything outside plans.shape's (other
root fields, introspection, other directives, mutations...): Tartiflette executes those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tartiflette.language.ast import (
    BooleanValueNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    StringValueNode,
    VariableNode,
)

from api_shared.ids import parse_id
from books_graphql.plans.shape import TYPENAME, CatalogShape, RootKind
from books_graphql.plans.snapshot import CatalogSnapshot
from books_graphql.plans.variables import UnsupportedError, VariableSpec, coerce_variables

MAX_RESOLVED_SHAPES = 64  # condition combinations kept per plan (2^n for n variables)


@dataclass(frozen=True, slots=True)
class Condition:
    """``@include(if:)`` (include=True) or ``@skip(if:)`` (include=False)."""

    include: bool
    literal: bool | None
    variable: str | None

    def keeps(self, values: Mapping[str, bool]) -> bool:
        value = self.literal if self.variable is None else values[self.variable]
        return value is self.include


@dataclass(frozen=True, slots=True)
class FieldSelection:
    key: str  # alias or name
    name: str
    conditions: tuple[Condition, ...]
    argument: str | VariableNode | None  # book(id:): a literal or a variable
    selections: tuple[Selection, ...] | None


@dataclass(frozen=True, slots=True)
class FragmentSelection:
    name: str | None  # a named fragment's name (spread once per selection set), None inline
    conditions: tuple[Condition, ...]
    selections: tuple[Selection, ...]


Selection = FieldSelection | FragmentSelection


@dataclass(frozen=True, slots=True)
class BookObject:
    """How to build books' objects from their rows: code generated for the selection.

    ``{"title": row[1], "author": row[2]}`` as a literal is four times faster than any
    generic loop (``dict(zip(keys, getter(row)))``), which is what makes 10,000 books cheap.
    """

    keys: tuple[str, ...]
    one: Callable[[tuple[str, ...]], dict[str, str]]
    every: Callable[[tuple[tuple[str, ...], ...]], list[dict[str, str]]]

    @classmethod
    def of(cls, keys: tuple[str, ...], indices: list[int]) -> BookObject:
        # Only response keys (GraphQL names, validated by the parser, and repr-quoted anyway)
        # and column indices (ints) reach the generated source.
        fields = ", ".join(
            f"{key!r}: row[{int(index)}]" for key, index in zip(keys, indices, strict=True)
        )
        one = f"lambda row: {{{fields}}}"
        every = f"lambda rows: [{{{fields}}} for row in rows]"
        no_builtins: dict[str, Any] = {"__builtins__": {}}
        return cls(keys, eval(one, no_builtins), eval(every, no_builtins))  # noqa: S307


@dataclass(frozen=True, slots=True)
class Step:
    """One entry of ``data``: ``__typename``, every book, or a book by id."""

    key: str
    kind: RootKind | None  # None: the query type's name
    book: BookObject | None = None
    argument: str | VariableNode | None = None

    def run(self, snapshot: CatalogSnapshot, variables: Mapping[str, Any], typename: str) -> Any:
        if self.kind is None:
            return typename
        assert self.book is not None
        if self.kind is RootKind.ALL_BOOKS:
            return self.book.every(snapshot.rows)
        raw = (
            variables[self.argument.name.value]
            if isinstance(self.argument, VariableNode)
            else self.argument
        )
        book_id = parse_id(raw)
        row = snapshot.rows_by_id.get(str(book_id)) if book_id is not None else None
        return None if row is None else self.book.one(row)


@dataclass(slots=True)
class QueryPlan:
    """A compiled operation; ``run`` returns the response body, or None for Tartiflette."""

    shape: CatalogShape
    variables: tuple[VariableSpec, ...]
    selections: tuple[Selection, ...]
    condition_variables: tuple[str, ...]
    _resolved: dict[tuple[bool, ...], tuple[Step, ...]] = field(default_factory=dict)

    def run(
        self, snapshot: CatalogSnapshot, provided: Mapping[str, Any] | None, *, max_rows: int
    ) -> dict[str, Any] | None:
        values = coerce_variables(self.variables, provided)
        if values is None:
            return None
        conditions = tuple(values.get(name) for name in self.condition_variables)
        if not all(type(value) is bool for value in conditions):
            return None  # a null condition: Tartiflette's error
        steps = self._steps(conditions)  # type: ignore[arg-type]  # all bools, checked above
        for step in steps:
            argument = step.argument
            if (
                isinstance(argument, VariableNode)
                and type(values.get(argument.name.value)) is not str
            ):
                return None  # an id that is not a string: Tartiflette coerces or errs
        # The one list of the whole catalog an operation may select (limits) is what
        # ``books`` promises, whatever the catalog's size: not charged. Several (which the
        # limits refuse first) are charged in full, as the resolvers charge every list.
        lists = sum(1 for step in steps if step.kind is RootKind.ALL_BOOKS)
        if lists > 1 and lists * len(snapshot.rows) > max_rows:
            return None  # over the row budget: the resolvers answer QUERY_TOO_MANY_ROWS
        typename = self.shape.query_type
        return {"data": {step.key: step.run(snapshot, values, typename) for step in steps}}

    def _steps(self, conditions: tuple[bool, ...]) -> tuple[Step, ...]:
        steps = self._resolved.get(conditions)
        if steps is None:
            values = dict(zip(self.condition_variables, conditions, strict=True))
            steps = tuple(_root_steps(self.shape, self.selections, values))
            if len(self._resolved) < MAX_RESOLVED_SHAPES:
                self._resolved[conditions] = steps
        return steps


def compile_plan(document: Any, operation_name: str | None, shape: CatalogShape) -> QueryPlan:
    """The plan of one operation of a validated document (``UnsupportedError`` if not covered)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    if operation_name is None:
        if len(operations) != 1:
            raise UnsupportedError("the operation must be chosen")
        operation = operations[0]
    else:
        matching = [o for o in operations if o.name and o.name.value == operation_name]
        if len(matching) != 1:
            raise UnsupportedError("no such operation")
        operation = matching[0]
    if operation.operation_type != "query" or operation.directives or not shape.roots:
        raise UnsupportedError("not a plain query")
    compiler = _Compiler(fragments, shape)
    selections = compiler.selections(operation.selection_set, shape.query_type, root=True)
    return QueryPlan(
        shape=shape,
        variables=tuple(VariableSpec.from_node(v) for v in operation.variable_definitions or ()),
        selections=selections,
        condition_variables=tuple(sorted(compiler.condition_variables)),
    )


@dataclass(slots=True)
class _Compiler:
    fragments: Mapping[str, Any]
    shape: CatalogShape
    condition_variables: set[str] = field(default_factory=set)

    def selections(
        self, selection_set: Any, type_name: str, *, root: bool
    ) -> tuple[Selection, ...]:
        compiled: list[Selection] = []
        for node in selection_set.selections:
            conditions = self._conditions(node.directives)
            if isinstance(node, FieldNode):
                compiled.append(self._field(node, conditions, root=root))
                continue
            if isinstance(node, FragmentSpreadNode):
                definition = self.fragments[node.name.value]
                name: str | None = node.name.value
                if definition.directives:
                    raise UnsupportedError("directives on a fragment definition")
                condition, selection_set_node = definition.type_condition, definition.selection_set
            elif isinstance(node, InlineFragmentNode):
                name, condition, selection_set_node = None, node.type_condition, node.selection_set
            else:
                raise UnsupportedError("unknown selection")
            if condition is not None and condition.name.value != type_name:
                raise UnsupportedError("a fragment on another type")
            compiled.append(
                FragmentSelection(
                    name, conditions, self.selections(selection_set_node, type_name, root=root)
                )
            )
        return tuple(compiled)

    def _field(self, node: Any, conditions: tuple[Condition, ...], *, root: bool) -> FieldSelection:
        name = node.name.value
        key = node.alias.value if node.alias else name
        argument: str | VariableNode | None = None
        sub: tuple[Selection, ...] | None = None
        if root and name in self.shape.roots:
            if self.shape.roots[name] is RootKind.BOOK_BY_ID:
                argument = self._id_argument(node.arguments)
            elif node.arguments:
                raise UnsupportedError("arguments")
            if node.selection_set is None:
                raise UnsupportedError("no selection set")
            sub = self.selections(node.selection_set, self.shape.book_type, root=False)
        elif name == TYPENAME or (not root and name in self.shape.columns):
            if node.arguments or node.selection_set is not None:
                raise UnsupportedError("arguments or selections on a leaf")
        else:
            raise UnsupportedError(f"field {name} is not planned")
        return FieldSelection(key, name, conditions, argument, sub)

    def _id_argument(self, arguments: Any) -> str | VariableNode:
        if not arguments or len(arguments) != 1 or arguments[0].name.value != "id":
            raise UnsupportedError("book needs exactly its id")
        value = arguments[0].value
        if isinstance(value, StringValueNode) and isinstance(value.value, str):
            return value.value
        if isinstance(value, VariableNode):
            return value
        raise UnsupportedError("an id literal that is not a string")

    def _conditions(self, directives: Any) -> tuple[Condition, ...]:
        conditions = []
        for directive in directives or ():
            name = directive.name.value
            arguments = directive.arguments or []
            if name not in ("skip", "include") or len(arguments) != 1:
                raise UnsupportedError(f"directive @{name}")
            value = arguments[0].value
            if isinstance(value, BooleanValueNode) and isinstance(value.value, bool):
                conditions.append(Condition(name == "include", value.value, None))
            elif isinstance(value, VariableNode):
                self.condition_variables.add(value.name.value)
                conditions.append(Condition(name == "include", None, value.name.value))
            else:
                raise UnsupportedError("a condition that is not a boolean")
        return tuple(conditions)


def _collect(
    selections: tuple[Selection, ...],
    values: Mapping[str, bool],
    groups: dict[str, list[FieldSelection]] | None = None,
    visited: set[str] | None = None,
) -> dict[str, list[FieldSelection]]:
    """The specification's CollectFields: response key → its fields, in document order."""
    groups = {} if groups is None else groups
    visited = set() if visited is None else visited
    for selection in selections:
        if not all(condition.keeps(values) for condition in selection.conditions):
            continue
        if isinstance(selection, FieldSelection):
            groups.setdefault(selection.key, []).append(selection)
            continue
        if selection.name is not None:
            if selection.name in visited:
                continue
            visited.add(selection.name)
        _collect(selection.selections, values, groups, visited)
    return groups


def _root_steps(
    shape: CatalogShape, selections: tuple[Selection, ...], values: Mapping[str, bool]
) -> list[Step]:
    steps = []
    for key, fields in _collect(selections, values).items():
        first = fields[0]
        if first.name == TYPENAME:
            steps.append(Step(key, None))
            continue
        merged = tuple(s for f in fields for s in f.selections or ())
        book = _book_object(shape, merged, values)
        steps.append(Step(key, shape.roots[first.name], book, first.argument))
    return steps


def _book_object(
    shape: CatalogShape, selections: tuple[Selection, ...], values: Mapping[str, bool]
) -> BookObject:
    groups = _collect(selections, values)
    indices = [shape.columns.index(fields[0].name) for fields in groups.values()]
    return BookObject.of(tuple(groups), indices)
