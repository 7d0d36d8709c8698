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

``check`` is where a document is measured: the size first, then ``scan`` reads the document
once, and ``totals`` counts each fragment where it is spread and holds each operation to the
limits. ``bounds`` holds the limits (``QueryLimits``), what the scan learns (``DocumentShape``)
and why a document is refused (``LimitExceeded``).
"""
