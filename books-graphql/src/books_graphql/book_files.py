"""Books from files: CSV (header ``title,author[,id]``), JSON (an array, or ``{"books": [...]}``)
and JSON Lines, validated record by record with the record's place in the file.

A record without an ``id`` gets one derived from its title and author, so re-reading a file
yields the same books.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from api_shared.ids import parse_id
from books_graphql.catalog import (
    MAX_AUTHOR_LENGTH,
    MAX_TITLE_LENGTH,
    Book,
    derived_book_id,
)

FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class BookFileError(Exception):
    """A file that cannot be read as books; the message names the file and the record."""


def file_format(path: Path) -> str:
    """``csv``, ``json`` or ``jsonl``, from the file's suffix."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise BookFileError(
            f"{path}: unknown file type {path.suffix!r}; use one of {', '.join(FORMATS)}"
        )
    return kind


def read_books(path: Path) -> Iterator[Book]:
    """The books of a file, in file order; raises BookFileError at the first bad record."""
    kind = file_format(path)
    try:
        if kind == "csv":
            yield from _read_csv(path)
        elif kind == "jsonl":
            yield from _read_json_lines(path)
        else:
            yield from _read_json(path)
    except OSError as error:
        raise BookFileError(f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise BookFileError(f"{path}: the file is not UTF-8 text") from None


def book_from_record(record: Any, where: str) -> Book:
    """Validate one record (``{"title", "author", "id"?}``) into a Book."""
    if not isinstance(record, Mapping):
        raise BookFileError(f"{where}: expected an object with title and author")
    title = _text(record, "title", MAX_TITLE_LENGTH, where)
    author = _text(record, "author", MAX_AUTHOR_LENGTH, where)
    raw_id = record.get("id")
    if raw_id is None or raw_id == "":
        return Book(id=derived_book_id(title, author), title=title, author=author)
    book_id = parse_id(raw_id)
    if book_id is None:
        raise BookFileError(f"{where}: id must be a UUID, got {raw_id!r}")
    return Book(id=str(book_id), title=title, author=author)


def _text(record: Mapping[str, Any], name: str, max_length: int, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise BookFileError(f"{where}: {name} is required")
    value = " ".join(value.split())  # trimmed, inner runs of whitespace collapsed
    if len(value) > max_length:
        raise BookFileError(f"{where}: {name} is longer than {max_length} characters")
    return value


def _read_csv(path: Path) -> Iterator[Book]:
    with path.open(newline="", encoding="utf-8-sig") as file:  # -sig: Excel's byte-order mark
        reader = csv.DictReader(file)
        if reader.fieldnames is None:
            return
        # Header names are matched case-insensitively ("Title", " author ").
        reader.fieldnames = [name.strip().lower() for name in reader.fieldnames]
        missing = {"title", "author"} - set(reader.fieldnames)
        if missing:
            raise BookFileError(f"{path}: the header lacks {', '.join(sorted(missing))}")
        for row in reader:
            yield book_from_record(row, f"{path}, line {reader.line_num}")


def _read_json(path: Path) -> Iterator[Book]:
    try:
        document = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise BookFileError(f"{path}: not valid JSON ({error})") from None
    records = document.get("books") if isinstance(document, dict) else document
    if not isinstance(records, list):
        raise BookFileError(f'{path}: expected an array of books or {{"books": [...]}}')
    for index, record in enumerate(records, start=1):
        yield book_from_record(record, f"{path}, book {index}")


def _read_json_lines(path: Path) -> Iterator[Book]:
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise BookFileError(f"{path}, line {number}: not valid JSON") from None
            yield book_from_record(record, f"{path}, line {number}")
