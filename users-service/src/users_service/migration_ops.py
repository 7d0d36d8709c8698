"""Migration operations of users-service's own, shared by its migrations."""

from __future__ import annotations

from typing import Any

from tortoise.fields.base import Field
from tortoise.migrations import operations as ops


class AddColumnWithDatabaseDefault(ops.AddField):
    """AddField's model state, with SQL written by hand: Tortoise's own ALTER TABLE adds a NOT
    NULL column without a database default, which fails on a table that has rows; and
    replicas still running the previous version insert users without this column."""

    def __init__(
        self, model_name: str, name: str, field: Field[Any], *, sql: str, reverse_sql: str
    ) -> None:
        super().__init__(model_name, name, field)
        self.sql, self.reverse_sql = sql, reverse_sql

    async def database_forward(
        self, app_label: str, old_state: Any, new_state: Any, state_editor: Any = None
    ) -> None:
        if state_editor:
            await state_editor._run_sql(self.sql)

    async def database_backward(
        self, app_label: str, old_state: Any, new_state: Any, state_editor: Any = None
    ) -> None:
        if state_editor:
            await state_editor._run_sql(self.reverse_sql)
