"""The one pass over a document: a small tokenizer that understands just enough of the
grammar to count fields, levels and brackets per definition, stopping at the first excess.

Fragments are recorded where they are spread, not expanded (``totals`` does that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from books_graphql.limits.bounds import (
    NESTING_PER_LEVEL,
    LimitExceeded,
    QueryLimits,
    too_deep,
    too_many_fields,
    too_nested,
)

OPERATION_KEYWORDS = frozenset({"query", "mutation", "subscription"})
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


@dataclass(slots=True)
class Definition:
    """An operation or a fragment as read: its own fields, depth, lists and whole-list keys,
    and the fragments it spreads, at which field level."""

    kind: str  # "query" | "mutation" | "subscription" | "fragment"
    name: str | None = None
    fields: int = 0
    depth: int = 0
    list_fields: int = 0
    whole_list_keys: set[str] = field(default_factory=set)  # response keys of whole lists
    spreads: list[tuple[str, int]] = field(default_factory=list)  # (fragment, field level)


def scan(query: str, limits: QueryLimits) -> list[Definition] | LimitExceeded:
    """The definitions of ``query``, each measured apart from its spreads; or why it is
    refused as soon as it is."""
    definitions: list[Definition] = []
    current: Definition | None = None
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
                    return too_nested(limits)
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
                    return too_many_fields(limits)
                if level > limits.max_depth:
                    return too_deep(limits)
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
                    current = Definition(kind=name)
                    definitions.append(current)
            elif current.name is None:
                current.name = name
                skip_name = current.kind == "fragment"  # fragment Name on Type: skip "on"
        elif kind == "punct":
            symbol = match.group(kind)
            if symbol == "{":
                if not braces:
                    if current is None:  # the query shorthand: { ... }
                        current = Definition(kind="query")
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

    return definitions
