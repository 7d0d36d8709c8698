"""Today's introspection schema on top of Tartiflette's June 2018 one.

Why: Tartiflette implements the introspection types of the June 2018 specification. The
clients of today ask for more: graphql-js's ``getIntrospectionQuery`` options
``specifiedByUrl``, ``directiveIsRepeatable``, ``schemaDescription``,
``inputValueDeprecation``, ``oneOf`` (and ``experimentalDirectiveDeprecation``), which
GraphQL Code Generator, Rover, IDE plugins and the Python ``gql`` client (it turns
``inputValueDeprecation`` on by default) send. Without these fields such a query fails
validation and the client cannot read the schema at all.

How: this module is one of the engine's ``modules``. Its SDL extends Tartiflette's
built-in introspection types (``tartiflette/schema/builtins/introspection.sdl``) with the
fields the specification added since (and ``isOneOf`` of OneOf input objects). The lists
that gained an ``includeDeprecated`` argument cannot be redefined by an extension (the
schema refuses a field twice), so their resolvers add the argument to the field while the
schema is baked, before the fields' arguments are (``_ResolverAddingArgument``).
Tartiflette has no way to deprecate an argument, an input field or a directive, nor
``@specifiedBy`` or ``@oneOf``, so the new fields answer what is true of every schema it
can serve: nothing of these deprecated, no specification URL, no repeatable directive, no
OneOf input object.
"""

from __future__ import annotations

from typing import Any

from tartiflette import Resolver
from tartiflette.language.ast import BooleanValueNode
from tartiflette.types.argument import GraphQLArgument

SDL = """
extend type __Schema {
  description: String
}

extend type __Type {
  specifiedByURL: String
  isOneOf: Boolean
}

extend type __InputValue {
  isDeprecated: Boolean!
  deprecationReason: String
}

extend type __Directive {
  isRepeatable: Boolean!
  isDeprecated: Boolean!
  deprecationReason: String
}
"""


# Existing fields that take ``includeDeprecated: Boolean = false`` today.
LISTS_WITH_DEPRECATION = {
    "__Schema.directives": "directives",
    "__Type.inputFields": "inputFields",
    "__Field.args": "args",
    "__Directive.args": "args",
}
INCLUDE_DEPRECATED_DESCRIPTION = "Whether deprecated entries are listed too."


class _ResolverAddingArgument(Resolver):
    """A resolver that first gives its field the ``includeDeprecated`` argument.

    Registered resolvers are baked after the schema's extensions and before its types, so
    the argument added here is baked with the field's own arguments.
    """

    def bake(self, schema: Any) -> None:
        field = schema.get_field_by_name(self.name)
        field.arguments.setdefault(
            "includeDeprecated",
            GraphQLArgument(
                name="includeDeprecated",
                gql_type="Boolean",
                default_value=BooleanValueNode(value=False),
                description=INCLUDE_DEPRECATED_DESCRIPTION,
            ),
        )
        super().bake(schema)


def _listed(attribute: str) -> Any:
    """A resolver of a list that ``includeDeprecated: false`` filters (nothing is, today)."""

    async def resolve(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> Any:
        values = getattr(parent, attribute, None)
        if values is None or args.get("includeDeprecated"):
            return values
        return [value for value in values if not getattr(value, "isDeprecated", False)]

    return resolve


def _constant(value: Any) -> Any:
    async def resolve(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> Any:
        return value

    return resolve


async def _is_one_of(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> bool | None:
    # A boolean for input objects, null for every other kind (as the specification has it).
    return False if getattr(parent, "kind", None) == "INPUT_OBJECT" else None


def bake(schema_name: str, config: dict[str, Any] | None = None) -> str:
    """Tartiflette's module hook: register the resolvers, return the extending SDL."""
    for field_name, attribute in LISTS_WITH_DEPRECATION.items():
        _ResolverAddingArgument(field_name, schema_name=schema_name)(_listed(attribute))
    resolvers = {
        # The catalog's SDL describes no schema (Tartiflette's schema object carries the
        # description of the __Schema type instead, which is not the schema's).
        "__Schema.description": _constant(None),
        "__Type.specifiedByURL": _constant(None),
        "__Type.isOneOf": _is_one_of,
        "__InputValue.isDeprecated": _constant(False),
        "__InputValue.deprecationReason": _constant(None),
        "__Directive.isRepeatable": _constant(False),
        "__Directive.isDeprecated": _constant(False),
        "__Directive.deprecationReason": _constant(None),
    }
    for field_name, resolver in resolvers.items():
        Resolver(field_name, schema_name=schema_name)(resolver)
    return SDL
