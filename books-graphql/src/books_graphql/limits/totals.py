"""A document's totals: each fragment counted where it is spread (measured once, never
expanded), and each operation held to the limits."""

from __future__ import annotations

from dataclasses import dataclass

from books_graphql.limits.bounds import (
    DocumentShape,
    LimitExceeded,
    QueryLimits,
    too_deep,
    too_many_fields,
    too_many_list_fields,
    too_many_whole_lists,
)
from books_graphql.limits.scan import Definition


@dataclass(frozen=True, slots=True)
class _Measure:
    """A definition with its fragments expanded: fields, depth, lists, whole-list keys."""

    fields: int = 0
    depth: int = 0
    lists: int = 0
    whole_list_keys: frozenset[str] = frozenset()


_NOTHING = _Measure()


def totals(definitions: list[Definition], limits: QueryLimits) -> DocumentShape | LimitExceeded:
    """Count fragments where they are spread, measuring each fragment once."""
    fragments = {d.name: d for d in definitions if d.kind == "fragment" and d.name}
    measured: dict[str, _Measure] = {}

    def measure(root: Definition) -> _Measure:
        # Iterative depth-first walk: a chain of thousands of fragments must not recurse.
        # A cycle (invalid, reported by validation) counts its back edge as nothing.
        in_progress: set[str] = set()
        stack: list[tuple[Definition, int]] = [(root, 0)]
        while stack:
            definition, next_spread = stack[-1]
            if next_spread < len(definition.spreads):
                stack[-1] = (definition, next_spread + 1)
                name = definition.spreads[next_spread][0]
                target = fragments.get(name)
                if target is not None and name not in measured and name not in in_progress:
                    in_progress.add(name)
                    stack.append((target, 0))
                continue
            stack.pop()
            total_fields, depth = definition.fields, definition.depth
            lists = definition.list_fields
            # A key spread twice is still one key: the set's union does not multiply.
            keys = set(definition.whole_list_keys)
            for name, level in definition.spreads:
                inner = measured.get(name, _NOTHING)
                total_fields += inner.fields
                lists += inner.lists
                keys |= inner.whole_list_keys
                if inner.depth:
                    depth = max(depth, level - 1 + inner.depth)
            result = _Measure(total_fields, depth, lists, frozenset(keys))
            if definition is root:
                return result
            assert definition.name is not None
            in_progress.discard(definition.name)
            measured[definition.name] = result
        raise AssertionError("unreachable: the root is always popped last")

    operations: dict[str | None, str] = {}
    total_fields = max_depth = total_lists = whole_lists = 0
    for definition in definitions:
        if definition.kind == "fragment":
            continue
        operations.setdefault(definition.name, definition.kind)
        operation = measure(definition)
        total_fields += operation.fields
        total_lists += operation.lists
        max_depth = max(max_depth, operation.depth)
        # Per operation, not summed: only the operation a request names is executed.
        whole_lists = max(whole_lists, len(operation.whole_list_keys))
        if total_fields > limits.max_fields:
            return too_many_fields(limits)
        if max_depth > limits.max_depth:
            return too_deep(limits)
        if total_lists > limits.max_list_fields:
            return too_many_list_fields(limits)
        if whole_lists > limits.max_whole_lists:
            return too_many_whole_lists(limits)
    return DocumentShape(
        operations=operations,
        fields=total_fields,
        depth=max_depth,
        list_fields=total_lists,
        whole_lists=whole_lists,
    )
