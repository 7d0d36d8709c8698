"""The limits a document is held to, what its scan learns, and why one is refused."""

from __future__ import annotations

from dataclasses import dataclass

# Literal nesting allowed per field level: a selection set, an inline fragment or two, and
# arguments' values; GraphiQL's introspection query uses about one.
NESTING_PER_LEVEL = 4


@dataclass(frozen=True, slots=True)
class QueryLimits:
    max_bytes: int
    max_depth: int
    max_fields: int
    max_list_fields: int = 10
    list_fields: frozenset[str] = frozenset()
    max_whole_lists: int = 1
    whole_list_fields: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LimitExceeded:
    """Why a document is refused: a GraphQL error message and its ``extensions.code``."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class DocumentShape:
    """What the scan learnt: the operations (name → type), the field counts and the depth.

    ``whole_lists`` is the most response keys of whole-catalog lists one operation selects.
    """

    operations: dict[str | None, str]
    fields: int
    depth: int
    list_fields: int = 0
    whole_lists: int = 0


def too_large(query: str, limits: QueryLimits) -> LimitExceeded | None:
    """The size check, before anything else (characters bound bytes from below)."""
    if len(query) > limits.max_bytes or len(query.encode()) > limits.max_bytes:
        return refusal("QUERY_TOO_LARGE", f"is larger than {limits.max_bytes} bytes")
    return None


def refusal(code: str, excess: str) -> LimitExceeded:
    """Every limit's refusal says alike what the query exceeds, and that the limit is ours."""
    return LimitExceeded(code, f"The query {excess}, the limit of this server.")


def too_deep(limits: QueryLimits) -> LimitExceeded:
    return refusal("QUERY_TOO_DEEP", f"nests fields more than {limits.max_depth} levels deep")


def too_nested(limits: QueryLimits) -> LimitExceeded:
    nesting = NESTING_PER_LEVEL * limits.max_depth
    return refusal("QUERY_TOO_DEEP", f"nests brackets more than {nesting} levels deep")


def too_many_fields(limits: QueryLimits) -> LimitExceeded:
    return refusal(
        "QUERY_TOO_MANY_FIELDS",
        f"selects more than {limits.max_fields} fields (aliases and fragment spreads count)",
    )


def too_many_list_fields(limits: QueryLimits) -> LimitExceeded:
    return refusal(
        "QUERY_TOO_MANY_LIST_FIELDS",
        f"selects more than {limits.max_list_fields} lists of books "
        "(aliases and fragment spreads count)",
    )


def too_many_whole_lists(limits: QueryLimits) -> LimitExceeded:
    fields = ", ".join(sorted(limits.whole_list_fields))
    return refusal(
        "QUERY_TOO_MANY_LIST_FIELDS",
        f"selects the whole catalog ({fields}) under more than {limits.max_whole_lists} "
        "name in one operation (an alias is another name, in a fragment too)",
    )
