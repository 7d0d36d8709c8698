"""Measuring documents before parsing them: exact counts, early refusal, hostile input."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

# The reference measure walks the AST of Tartiflette's own parser (libgraphqlparser's JSON).
from tartiflette.language.parsers.libgraphqlparser.parser import _parse_to_json_ast

from books_graphql.limits.bounds import DocumentShape, LimitExceeded, QueryLimits
from books_graphql.limits.check import check_limits

LIST_FIELDS = frozenset({"books", "booksConnection"})
WHOLE = frozenset({"books"})
UNLIMITED = QueryLimits(
    max_bytes=10**9,
    max_depth=10**9,
    max_fields=10**15,
    max_list_fields=10**15,
    list_fields=LIST_FIELDS,
    max_whole_lists=10**15,
    whole_list_fields=WHOLE,
)
# The service's own list limits, and room for everything else.
SERVED = QueryLimits(
    max_bytes=10**6,
    max_depth=15,
    max_fields=500,
    max_list_fields=10,
    list_fields=LIST_FIELDS,
    whole_list_fields=WHOLE,
)


def reference_shape(query: str) -> tuple[int, int, int, int]:
    """(fields, depth, list fields, whole lists) from the parsed AST, fragments expanded where
    spread; whole lists: the most response keys of ``books`` in one operation."""
    document = orjson.loads(_parse_to_json_ast(query))
    fragments = {
        d["name"]["value"]: d for d in document["definitions"] if d["kind"] == "FragmentDefinition"
    }

    def walk(
        selection_set: dict[str, Any] | None, level: int, keys: set[str]
    ) -> tuple[int, int, int]:
        fields = depth = lists = 0
        for selection in (selection_set or {}).get("selections", []):
            if selection["kind"] == "Field":
                inner = walk(selection["selectionSet"], level + 1, keys)
                name = selection["name"]["value"]
                fields += 1 + inner[0]
                depth = max(depth, level, inner[1])
                lists += inner[2] + (name in LIST_FIELDS)
                if name in WHOLE:
                    keys.add((selection.get("alias") or selection["name"])["value"])
                continue
            if selection["kind"] == "InlineFragment":
                inner = walk(selection["selectionSet"], level, keys)
            else:
                fragment = fragments[selection["name"]["value"]]
                inner = walk(fragment["selectionSet"], level, keys)
            fields, depth, lists = fields + inner[0], max(depth, inner[1]), lists + inner[2]
        return fields, depth, lists

    total = deepest = all_lists = whole = 0
    for definition in document["definitions"]:
        if definition["kind"] == "OperationDefinition":
            keys: set[str] = set()
            fields, depth, lists = walk(definition["selectionSet"], 1, keys)
            total, deepest, all_lists = total + fields, max(deepest, depth), all_lists + lists
            whole = max(whole, len(keys))
    return total, deepest, all_lists, whole


DOCUMENTS = [
    "{ books { title author } }",
    '{ a: books { t: title } b: books { title } c: book(id: "x") { id } }',
    'query Q($id: ID! = "{ not { a selection } }") { book(id: $id) { title } }',
    "{ books { ...F } } fragment F on Book { id title }",
    "{ x: books { ...F ...F } } fragment F on Book { ...G author } fragment G on Book { id }",
    "{ books { ... on Book { title } ... @include(if: true) { author } } }",
    "{ books { ... { id } } }",
    "{ books @skip(if: false) { title @include(if: true) } }",
    '{ book(id: "a } b { c") { title } }  # a comment { with braces }',
    '{ book(id: """block { string } with \\""" inside""") { title } }',
    "query A { books { title } } query B { __typename books { id } }",
    "mutation M { books { title } } subscription S { books { id } }",
    "{ on: books { fragment: title query: author } }",
    "{ books(filter: {a: [1, {b: 2}], c: $x}) { title } }",
    "{ __schema { types { fields { type { ofType { name } } } } } }",
    "fragment F on Query { books { title } } { ...F __typename }",
    "{\n  books {\n    title,\n    author,\n  }\n}\n",
    "{ books: book(id: 1) { id } book: books { id } b2: booksConnection { totalCount } }",
    "{ a: books @include(if: true) { id } b: booksConnection(first: 2) { edges { node { id } } } }",
    "{ books { title } books { author } ...F } fragment F on Query { books { id } }",
    "{ books: books { id } books { title } }",
    "{ a: books { id } ...F ...G } fragment F on Query { b: books { id } } "
    "fragment G on Query { ...F a: books { title } }",
    "{ books { id } } query Q { a: books { id } b: books { id } c: books { id } }",
    "{ a: book(id: 1) { id } books: booksConnection { totalCount } }",
]


@pytest.mark.parametrize("query", DOCUMENTS)
def test_the_scan_counts_what_the_parsed_ast_counts(query: str) -> None:
    shape = check_limits(query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert (
        shape.fields,
        shape.depth,
        shape.list_fields,
        shape.whole_lists,
    ) == reference_shape(query)


def test_the_graphiql_introspection_query_is_measured_like_the_ast(
    introspection_query: str,
) -> None:
    shape = check_limits(introspection_query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert (
        shape.fields,
        shape.depth,
        shape.list_fields,
        shape.whole_lists,
    ) == reference_shape(introspection_query)
    assert shape.operations == {"IntrospectionQuery": "query"}


def test_operations_are_named_with_their_type() -> None:
    shape = check_limits(
        "query A { books { id } } mutation B { x } subscription { y } fragment F on Q { z }",
        UNLIMITED,
    )

    assert isinstance(shape, DocumentShape)
    assert shape.operations == {"A": "query", "B": "mutation", None: "subscription"}


def test_the_query_shorthand_is_an_anonymous_query() -> None:
    shape = check_limits("{ books { id } }", UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert shape.operations == {None: "query"}


def test_lists_of_books_are_limited_however_they_are_aliased_or_spread() -> None:
    limits = QueryLimits(
        max_bytes=10**6, max_depth=15, max_fields=500, max_list_fields=3, list_fields=LIST_FIELDS
    )
    three = "{ a: books { id } b: books { id } ...F } fragment F on Query { books { id } }"
    four = three.replace("{ books { id } }", "{ books { id } c: booksConnection { totalCount } }")

    assert isinstance(check_limits(three, limits), DocumentShape)
    refused = check_limits(four, limits)
    assert isinstance(refused, LimitExceeded)
    assert refused.code == "QUERY_TOO_MANY_LIST_FIELDS"
    assert "3 lists of books" in refused.message


@pytest.mark.parametrize(
    "query",
    [
        "{ books { title author } }",
        "{ books { title } books { author } }",  # one response key: merged, resolved once
        "{ ...A ...B } fragment A on Query { books { title } } "
        "fragment B on Query { books { id } }",
        "{ everything: books { id } ...F } fragment F on Query { everything: books { title } }",
        '{ books { id } books: book(id: "x") { id } b: book(id: "y") { id } }',
        "{ books { id } p: booksConnection { totalCount } q: booksConnection { totalCount } }",
        "query A { books { id } } query B { all: books { title } }",  # one runs
        "{ books: booksConnection { totalCount } book: books { id } }",
    ],
    ids=[
        "once",
        "repeated-key",
        "fragments-one-key",
        "alias-in-fragment-same-key",
        "books-key-aliasing-book",
        "with-pages",
        "two-operations",
        "swapped-names",
    ],
)
def test_an_operation_may_select_the_whole_catalog_under_one_name(query: str) -> None:
    shape = check_limits(query, SERVED)

    assert isinstance(shape, DocumentShape), shape
    assert shape.whole_lists == 1


@pytest.mark.parametrize(
    "query",
    [
        "{ a: books { title } b: books { title } }",
        "{ books { title } all: books { title } }",
        "{ ...A ...B } fragment A on Query { a: books { id } } "
        "fragment B on Query { b: books { id } }",
        "{ books { id } ... on Query { again: books { id } } }",
        "{ a: books @include(if: true) { id } b: books @skip(if: true) { id } }",
        "{ books { id } ...F } fragment F on Query { ...G } "
        "fragment G on Query { x: books { id } }",
        "query A { books { id } } query B { a: books { id } b: books { id } }",
    ],
    ids=[
        "two-aliases",
        "name-and-alias",
        "two-fragments",
        "inline-fragment",
        "skip-and-include-both-count",
        "fragment-chain",
        "second-operation",
    ],
)
def test_the_whole_catalog_under_a_second_name_is_refused_before_parsing(query: str) -> None:
    refused = check_limits(query, SERVED)

    assert isinstance(refused, LimitExceeded)
    assert refused.code == "QUERY_TOO_MANY_LIST_FIELDS"
    assert "whole catalog (books) under more than 1 name" in refused.message


def test_a_whole_list_spread_exponentially_is_still_one_key_and_measured_fast() -> None:
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 41))
    query = f"{{ ...F40 }} fragment F0 on Query {{ books {{ id }} }} {chain}"

    shape = check_limits(query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert (shape.whole_lists, shape.list_fields) == (1, 2**40)


@pytest.mark.parametrize(
    ("limits", "code", "says"),
    [
        (QueryLimits(max_bytes=10, max_depth=10, max_fields=10), "QUERY_TOO_LARGE", "10 bytes"),
        (QueryLimits(max_bytes=99, max_depth=1, max_fields=10), "QUERY_TOO_DEEP", "1 levels"),
        (QueryLimits(max_bytes=99, max_depth=9, max_fields=2), "QUERY_TOO_MANY_FIELDS", "2 fields"),
    ],
)
def test_each_limit_refuses_with_its_code_and_names_the_limit(
    limits: QueryLimits, code: str, says: str
) -> None:
    refused = check_limits("{ books { title author } }", limits)

    assert isinstance(refused, LimitExceeded)
    assert refused.code == code
    assert says in refused.message


def test_limits_at_exactly_the_document_admit_it() -> None:
    query = "{ books { title author } }"
    limits = QueryLimits(max_bytes=len(query), max_depth=2, max_fields=3)

    assert isinstance(check_limits(query, limits), DocumentShape)


def test_size_counts_bytes_not_characters() -> None:
    query = '{ book(id: "ééééé") { id } }'
    limits = QueryLimits(max_bytes=len(query), max_depth=5, max_fields=5)

    refused = check_limits(query, limits)

    assert isinstance(refused, LimitExceeded)
    assert refused.code == "QUERY_TOO_LARGE"


def test_fragment_spreads_multiply_without_being_expanded() -> None:
    # Each fragment spreads the previous one twice: 2**40 fields, measured in microseconds.
    chain = " ".join(f"fragment F{i} on Book {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 41))
    query = f"{{ books {{ ...F40 }} }} fragment F0 on Book {{ title }} {chain}"

    refused = check_limits(query, QueryLimits(max_bytes=10**6, max_depth=10, max_fields=1000))
    shape = check_limits(query, UNLIMITED)

    assert isinstance(refused, LimitExceeded)
    assert refused.code == "QUERY_TOO_MANY_FIELDS"
    assert isinstance(shape, DocumentShape)
    assert shape.fields == 1 + 2**40


def test_a_fragment_spread_deep_in_a_query_adds_its_depth() -> None:
    query = "{ a { b { ...F } } } fragment F on B { c { d } }"

    shape = check_limits(query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert shape.depth == 4  # a > b > c > d


def test_cyclic_and_unknown_fragments_are_left_to_validation() -> None:
    query = (
        "{ books { ...A ...Missing } } fragment A on Book { id ...B } fragment B on Book { ...A }"
    )

    shape = check_limits(query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert shape.fields == 2  # books, id: the cycle and the unknown fragment add nothing


def test_a_long_chain_of_fragments_does_not_recurse() -> None:
    chain = " ".join(f"fragment F{i} on Book {{ ...F{i - 1} }}" for i in range(1, 5000))
    query = f"{{ books {{ ...F4999 }} }} fragment F0 on Book {{ title }} {chain}"

    shape = check_limits(query, UNLIMITED)

    assert isinstance(shape, DocumentShape)
    assert (shape.fields, shape.depth) == (2, 2)


def test_thousands_of_aliases_are_refused_after_reading_only_the_first_few() -> None:
    limits = QueryLimits(max_bytes=10**8, max_depth=15, max_fields=500)
    small = "{ " + " ".join(f"a{i}: books {{ title }}" for i in range(300)) + " }"
    huge = "{ " + " ".join(f"a{i}: books {{ title }}" for i in range(100_000)) + " }"

    def seconds(query: str) -> float:
        started = time.perf_counter()
        for _ in range(5):
            refused = check_limits(query, limits)
            assert isinstance(refused, LimitExceeded)
        return (time.perf_counter() - started) / 5

    # The cost follows the limit, not the document: 300x more aliases, about the same time.
    assert seconds(huge) < 5 * seconds(small) + 0.005


def test_hostile_blanks_and_unterminated_strings_scan_in_linear_time() -> None:
    blanks = "{ books { title } }" + " " * 200_000
    unterminated = '{ book(id: """' + "\\" * 50_000 + '"' * 2
    started = time.perf_counter()

    results = [check_limits(q, UNLIMITED) for q in (blanks, unterminated)]

    assert time.perf_counter() - started < 0.5
    assert isinstance(results[0], DocumentShape)
    assert results[0].fields == 2


@pytest.mark.parametrize(
    "query",
    [
        "{ book(id: " + "[" * 61 + "]" * 61 + ") { id } }",
        "{ book(id: " + "{a: " * 61 + "1" + "}" * 61 + ") { id } }",
        "query($x: ID = " + "[" * 61 + "]" * 61 + ") { books { id } }",
        "{ books @skip(if: " + "[" * 61 + "]" * 61 + ") { id } }",
        "{ books { " + "... on Book { " * 61 + "id" + " }" * 61 + " } }",
        "]" * 100 + "{ book(id: " + "[" * 61 + "]" * 61 + ") { id } }",
    ],
    ids=["list-argument", "object-argument", "variable-default", "directive", "inline", "stray"],
)
def test_brackets_nested_past_four_per_field_level_are_refused_wherever_they_are(
    query: str,
) -> None:
    # Field depth alone misses these: values and inline fragments add no field level, and
    # thousands of levels cost the parser half a second before failing on its JSON's depth.
    limits = QueryLimits(max_bytes=10**6, max_depth=15, max_fields=500)

    refused = check_limits(query, limits)

    assert isinstance(refused, LimitExceeded)
    assert refused.code == "QUERY_TOO_DEEP"
    assert "60 levels" in refused.message


def test_brackets_nested_up_to_four_per_field_level_are_admitted() -> None:
    query = "{ book(id: " + "[" * 58 + "]" * 58 + ") { id } }"  # 60 with the braces

    shape = check_limits(query, QueryLimits(max_bytes=10**6, max_depth=15, max_fields=500))

    assert isinstance(shape, DocumentShape)
