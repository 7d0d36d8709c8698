"""Bounded work: refuse a GraphQL document above a size, depth or field-count limit, cheaply.

Tartiflette has no such limits, and its parser is not cheap for hostile input: a document of
thousands of aliases costs tens of milliseconds to parse. So the document is measured *before*
it is parsed, by one pass of a small tokenizer that understands just enough of the grammar:

- size is checked first, in O(1);
- every field counts, aliases included (``{ a: books { title } b: books { title } }`` is 4);
  fragment spreads count the fields of their fragment each time they are spread (without
  expanding them: each fragment is measured once);
- depth is the nesting of fields (``{ books { title } }`` is 2); inline fragments add none;
- brackets of any kind (selection sets, inline fragments, list and object values in
  arguments) may nest at most ``NESTING_PER_LEVEL`` times ``max_depth``: the parser hands
  Tartiflette its AST as JSON, and a value nested thousands of levels deep costs half a
  second before failing on the JSON decoder's own depth limit;
- the scan stops as soon as a limit is exceeded, so refusing a document of ten thousand
  aliases costs about as much as reading the first ``max_fields`` of them;
- list fields of the catalog (``list_fields``: fields whose answer grows with the catalog,
  by their schema name, aliased or not) count like fields, and there may be at most
  ``max_list_fields`` of them: with the row budget the resolvers enforce while executing
  (``request_work``), this bounds the rows one request can make the server produce;
- the fields that return the whole catalog (``whole_list_fields``: ``books``) may be selected
  by an operation under at most ``max_whole_lists`` response keys (one): an alias is a new key,
  while a field repeated under the same key, directly or by fragments, is one field that the
  executor merges and resolves once. The catalog is the operator's, and as large as it is:
  what a caller may not do is multiply it. Only one operation of a document runs, so this
  limit is per operation, and ``@skip``/``@include`` are not evaluated (both branches count).

Limits apply to the whole document (every operation in it), which is what gets validated;
the whole-catalog limit applies to each operation.
Anything the tokenizer does not understand is left for the parser to reject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPERATION_KEYWORDS = frozenset({"query", "mutation", "subscription"})
# Literal nesting allowed per field level: a selection set, an inline fragment or two, and
# arguments' values; GraphiQL's introspection query uses about one.
NESTING_PER_LEVEL = 4
_OPENING, _CLOSING = frozenset("{[("), frozenset("}])")

# One significant token per match, after skipping whitespace, commas and comments.
# Possessive quantifiers (Python 3.11+) keep hostile strings from causing backtracking.
_TOKEN = re.compile(
    r"""
    (?:[\s,\ufeff]++|\#[^\n\r]*+)*+
    (?:
        (?P<block>\"\"\"(?:[^"\\]++|\\(?!\"\"\")|\\\"\"\"|"(?!""))*+\"\"\")
      | (?P<string>"(?:[^"\\\n\r]++|\\.)*+")
      | (?P<spread>\.\.\.)
      | (?P<name>[_A-Za-z][_0-9A-Za-z]*+)
      | (?P<punct>[{}()@:])
      | (?P<other>.)
      | (?P<end>\Z)  # trailing blanks end in a match, not in a retry at every position
    )
    """,
    re.VERBOSE | re.DOTALL,
)


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


@dataclass(slots=True)
class _Definition:
    kind: str  # "query" | "mutation" | "subscription" | "fragment"
    name: str | None = None
    fields: int = 0
    depth: int = 0
    list_fields: int = 0
    whole_list_keys: set[str] = field(default_factory=set)  # response keys of whole lists
    spreads: list[tuple[str, int]] = field(default_factory=list)  # (fragment, field level)


def too_large(query: str, limits: QueryLimits) -> LimitExceeded | None:
    """The size check, before anything else (characters bound bytes from below)."""
    if len(query) > limits.max_bytes or len(query.encode()) > limits.max_bytes:
        return _refusal("QUERY_TOO_LARGE", f"is larger than {limits.max_bytes} bytes")
    return None


def check_limits(query: str, limits: QueryLimits) -> DocumentShape | LimitExceeded:
    """Measure ``query`` against ``limits``: its shape, or why it is refused."""
    refused = too_large(query, limits)
    if refused is not None:
        return refused
    return _scan(query, limits)


def _refusal(code: str, excess: str) -> LimitExceeded:
    """Every limit's refusal says alike what the query exceeds, and that the limit is ours."""
    return LimitExceeded(code, f"The query {excess}, the limit of this server.")


def _too_deep(limits: QueryLimits) -> LimitExceeded:
    return _refusal("QUERY_TOO_DEEP", f"nests fields more than {limits.max_depth} levels deep")


def _too_nested(limits: QueryLimits) -> LimitExceeded:
    nesting = NESTING_PER_LEVEL * limits.max_depth
    return _refusal("QUERY_TOO_DEEP", f"nests brackets more than {nesting} levels deep")


def _too_many_fields(limits: QueryLimits) -> LimitExceeded:
    return _refusal(
        "QUERY_TOO_MANY_FIELDS",
        f"selects more than {limits.max_fields} fields (aliases and fragment spreads count)",
    )


def _too_many_list_fields(limits: QueryLimits) -> LimitExceeded:
    return _refusal(
        "QUERY_TOO_MANY_LIST_FIELDS",
        f"selects more than {limits.max_list_fields} lists of books "
        "(aliases and fragment spreads count)",
    )


def _too_many_whole_lists(limits: QueryLimits) -> LimitExceeded:
    fields = ", ".join(sorted(limits.whole_list_fields))
    return _refusal(
        "QUERY_TOO_MANY_LIST_FIELDS",
        f"selects the whole catalog ({fields}) under more than {limits.max_whole_lists} "
        "name in one operation (an alias is another name, in a fragment too)",
    )


def _scan(query: str, limits: QueryLimits) -> DocumentShape | LimitExceeded:
    definitions: list[_Definition] = []
    current: _Definition | None = None
    braces: list[bool] = []  # one per open selection set: does it add a field level?
    level = 0  # field levels open: a field read now sits at this level
    parens = 0  # inside arguments or variable definitions: nothing there is a selection
    skip_name = False  # the next name is an alias's field, a directive or a type condition
    aliased = False  # ... and it is an alias's field (the last name read was its alias)
    last_is_list = False  # the last field read counted as a list field
    last_field = ""  # the last field name read (an alias if a colon follows)
    last_key: str | None = None  # ... the whole-list key it added, undone if it is an alias
    after_spread = False  # the last token was "..."
    inline_fragment = False  # a "..." without a fragment name: its "{" adds no level
    seen_fields = 0
    nesting = 0  # brackets of any kind open, wherever they are (arguments included)
    max_nesting = NESTING_PER_LEVEL * limits.max_depth

    for match in _TOKEN.finditer(query):
        kind = match.lastgroup
        if kind in ("punct", "other"):
            symbol = match.group(kind)
            if symbol in _OPENING:
                nesting += 1
                if nesting > max_nesting:
                    return _too_nested(limits)
            elif symbol in _CLOSING:
                nesting = max(nesting - 1, 0)  # stray closers cannot buy extra openers
        if parens:
            if kind == "punct":
                symbol = match.group(kind)
                if symbol == "(":
                    parens += 1
                elif symbol == ")":
                    parens -= 1
            continue
        if kind == "name":
            name = match.group(kind)
            if after_spread:
                after_spread = False
                if name == "on":
                    skip_name = True  # ... on Type { ... }
                elif current is not None:
                    inline_fragment = False
                    current.spreads.append((name, level))
            elif skip_name:
                skip_name = False
                if aliased and current is not None:
                    # ``alias: field``: the field's name, not the alias, says what it is.
                    aliased = False
                    last_is_list = name in limits.list_fields
                    current.list_fields += last_is_list
                    if name in limits.whole_list_fields:
                        current.whole_list_keys.add(last_field)  # the alias is the key
            elif braces:
                # A field (or an alias, whose field name is skipped after the colon).
                seen_fields += 1
                if seen_fields > limits.max_fields:
                    return _too_many_fields(limits)
                if level > limits.max_depth:
                    return _too_deep(limits)
                assert current is not None
                current.fields += 1
                current.depth = max(current.depth, level)
                last_is_list = name in limits.list_fields
                current.list_fields += last_is_list
                last_field, last_key = name, None
                if name in limits.whole_list_fields and name not in current.whole_list_keys:
                    current.whole_list_keys.add(name)
                    last_key = name
            elif current is None:
                if name in OPERATION_KEYWORDS or name == "fragment":
                    current = _Definition(kind=name)
                    definitions.append(current)
            elif current.name is None:
                current.name = name
                skip_name = current.kind == "fragment"  # fragment Name on Type: skip "on"
        elif kind == "punct":
            symbol = match.group(kind)
            if symbol == "{":
                if not braces:
                    if current is None:  # the query shorthand: { ... }
                        current = _Definition(kind="query")
                        definitions.append(current)
                    braces.append(True)
                else:
                    braces.append(not inline_fragment)
                inline_fragment = False
                after_spread = False
                level += braces[-1]
            elif symbol == "}":
                if braces:
                    level -= braces.pop()
                    if not braces:
                        current = None
            elif symbol == "(":
                parens = 1
            elif symbol in ("@", ":"):
                skip_name = True
                after_spread = False
                if symbol == ":" and braces and current is not None:
                    # What was read was an alias: its field comes next.
                    aliased = True
                    current.list_fields -= last_is_list
                    last_is_list = False
                    if last_key is not None:
                        current.whole_list_keys.discard(last_key)
                        last_key = None
        elif kind == "spread":
            after_spread = True
            inline_fragment = True

    return _expand(definitions, limits)


@dataclass(frozen=True, slots=True)
class _Measure:
    """A definition with its fragments expanded: fields, depth, lists, whole-list keys."""

    fields: int = 0
    depth: int = 0
    lists: int = 0
    whole_list_keys: frozenset[str] = frozenset()


_NOTHING = _Measure()


def _expand(definitions: list[_Definition], limits: QueryLimits) -> DocumentShape | LimitExceeded:
    """Count fragments where they are spread, measuring each fragment once."""
    fragments = {d.name: d for d in definitions if d.kind == "fragment" and d.name}
    measured: dict[str, _Measure] = {}

    def measure(root: _Definition) -> _Measure:
        # Iterative depth-first walk: a chain of thousands of fragments must not recurse.
        # A cycle (invalid, reported by validation) counts its back edge as nothing.
        in_progress: set[str] = set()
        stack: list[tuple[_Definition, int]] = [(root, 0)]
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
            return _too_many_fields(limits)
        if max_depth > limits.max_depth:
            return _too_deep(limits)
        if total_lists > limits.max_list_fields:
            return _too_many_list_fields(limits)
        if whole_lists > limits.max_whole_lists:
            return _too_many_whole_lists(limits)
    return DocumentShape(
        operations=operations,
        fields=total_fields,
        depth=max_depth,
        list_fields=total_lists,
        whole_lists=whole_lists,
    )
