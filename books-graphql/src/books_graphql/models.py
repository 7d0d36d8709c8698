"""The book record as stored (resolvers see ``catalog.Book``, never this)."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model


class Book(Model):
    id = fields.UUIDField(primary_key=True)
    title = fields.CharField(max_length=500)
    author = fields.CharField(max_length=300)

    class Meta:
        table = "books"
