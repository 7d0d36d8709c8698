"""Reading books from CSV, JSON and JSON Lines, and importing them batch by batch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from books_graphql.book_files import BookFileError, book_from_record, read_books
from books_graphql.catalog import Book, derived_book_id
from books_graphql.repository import BookRepository
from books_graphql.services import BookService
from books_graphql.settings import DEFAULT_SEED_FILE

KINDRED_ID = "6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f"


def test_the_seed_file_holds_the_classics_with_stable_unique_ids() -> None:
    books = list(read_books(DEFAULT_SEED_FILE))

    assert Book(id="3dc6d567-b05b-5923-880a-6f895eef849d", title="The Awakening",
                author="Kate Chopin") in books  # fmt: skip
    assert Book(id="273ccf2c-fd5d-58e9-b404-f0f62c40b58d", title="City of Glass",
                author="Paul Auster") in books  # fmt: skip
    assert len(books) >= 20
    assert len({book.id for book in books}) == len(books)


def test_csv_headers_are_matched_loosely_and_values_trimmed(tmp_path: Path) -> None:
    file = tmp_path / "books.csv"
    file.write_text(
        f"\ufeff Title ,AUTHOR,Id,Year\n  Kindred , Octavia  E. Butler ,{KINDRED_ID},1979\n",
        encoding="utf-8",
    )

    assert list(read_books(file)) == [
        Book(id=KINDRED_ID, title="Kindred", author="Octavia E. Butler")
    ]


def test_json_may_be_an_array_or_an_object_with_books(tmp_path: Path) -> None:
    record = {"title": "Kindred", "author": "Octavia E. Butler", "id": KINDRED_ID}
    array, wrapped = tmp_path / "a.json", tmp_path / "b.json"
    array.write_bytes(orjson.dumps([record]))
    wrapped.write_bytes(orjson.dumps({"books": [record]}))

    assert (
        list(read_books(array))
        == list(read_books(wrapped))
        == [Book(id=KINDRED_ID, title="Kindred", author="Octavia E. Butler")]
    )


def test_json_lines_skip_blank_lines(tmp_path: Path) -> None:
    file = tmp_path / "books.ndjson"
    file.write_bytes(b'{"title": "Kindred", "author": "Octavia E. Butler"}\n\n  \n')

    assert [book.title for book in read_books(file)] == ["Kindred"]


def test_a_book_without_an_id_gets_the_same_id_every_time() -> None:
    first = book_from_record({"title": "Kindred", "author": "Octavia E. Butler"}, "x")
    again = book_from_record({"title": " kindred ", "author": "OCTAVIA E. BUTLER"}, "y")

    assert first.id == derived_book_id("Kindred", "Octavia E. Butler")
    assert again.id == first.id


def test_given_ids_are_normalised() -> None:
    book = book_from_record({"title": "K", "author": "O", "id": KINDRED_ID.upper()}, "x")

    assert book.id == KINDRED_ID


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"author": "A"}, "title is required"),
        ({"title": "  ", "author": "A"}, "title is required"),
        ({"title": "T", "author": 7}, "author is required"),
        ({"title": "T" * 501, "author": "A"}, "title is longer than 500 characters"),
        ({"title": "T", "author": "A", "id": "42"}, "id must be a UUID, got '42'"),
        (["T", "A"], "expected an object with title and author"),
    ],
)
def test_invalid_records_are_refused_with_their_place(record: object, message: str) -> None:
    with pytest.raises(BookFileError, match=f"^books.json, book 3: {message}$"):
        book_from_record(record, "books.json, book 3")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("books.csv", "name,author\nK,O\n", "the header lacks title"),
        ("books.csv", "title,author\nK,O\n,O\n", "line 3: title is required"),
        ("books.json", "{nope", "not valid JSON"),
        ("books.json", '{"items": []}', 'expected an array of books or {"books": [...]}'),
        ("books.jsonl", '{"title": "K", "author": "O"}\n{nope\n', "line 2: not valid JSON"),
        ("books.xml", "<books/>", "unknown file type '.xml'"),
    ],
)
def test_unreadable_files_say_where_and_why(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    file = tmp_path / name
    file.write_text(content, encoding="utf-8")

    with pytest.raises(BookFileError) as raised:
        list(read_books(file))

    assert str(raised.value).startswith(str(file))
    assert message in str(raised.value)


def test_a_missing_file_is_a_book_file_error(tmp_path: Path) -> None:
    with pytest.raises(BookFileError, match="No such file"):
        list(read_books(tmp_path / "absent.csv"))


class RecordingBooks(BookRepository):
    def __init__(self) -> None:
        self.stored: dict[str, Book] = {}
        self.batches: list[int] = []

    async def add_missing(self, books: Sequence[Book]) -> int:
        self.batches.append(len(books))
        new = [book for book in books if book.id not in self.stored]
        self.stored.update({book.id: book for book in new})
        return len(new)


async def test_import_writes_in_batches_and_reports_progress_per_batch() -> None:
    books = [Book(id=derived_book_id(f"T{i}", "A"), title=f"T{i}", author="A") for i in range(7)]
    repository = RecordingBooks()
    catalog = BookService(repository)
    progress: list[int] = []

    first = await catalog.import_books(books, batch_size=3, on_batch=progress.append)
    again = await catalog.import_books(books, batch_size=3)

    assert repository.batches == [3, 3, 1, 3, 3, 1]
    assert progress == [3, 3, 1]
    assert (first.read, first.added, first.already_present) == (7, 7, 0)
    assert (again.read, again.added, again.already_present) == (7, 0, 7)
