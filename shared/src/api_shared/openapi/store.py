"""The two registries of sanic-ext that every documenting decorator writes to: the operation
a handler stands for, and the document's component schemas."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from sanic_ext.extensions.openapi.builders import OperationStore, SpecificationBuilder
from sanic_ext.extensions.openapi.definitions import Reference

from api_shared.openapi.dialect import COMPONENTS, component_name, component_schemas


def operation_of(func: Any) -> Any:
    """sanic-ext's operation of the handler ``func``, created at its first decorator."""
    return OperationStore()[func]


def schema_ref(model: type[BaseModel], *, response: bool = False) -> Reference:
    """Register ``model`` (and the models it uses) as components; a reference to it."""
    spec = SpecificationBuilder()
    name = component_name(model)
    if not spec.has_component("schemas", name):
        for component, schema in component_schemas(model, response=response).items():
            if not spec.has_component("schemas", component):
                spec.add_component("schemas", component, schema)
    return Reference(COMPONENTS.format(model=name))
