"""Type aliases shared by the services."""

from __future__ import annotations

from typing import Any, TypeAlias

from sanic import Sanic

App: TypeAlias = Sanic[Any, Any]
"""A service's Sanic application (its config and ctx are plain namespaces)."""
