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


class CatalogVersion(Model):
    """One row: a counter bumped in the transaction of every change to ``books``.

    Replicas read it (a primary-key read, every few ms at most) to know when their
    in-memory catalog and their cached answers are out of date: see catalog_version.
    """

    id = fields.IntField(primary_key=True)
    version = fields.BigIntField(default=0)

    class Meta:
        table = "catalog_version"
