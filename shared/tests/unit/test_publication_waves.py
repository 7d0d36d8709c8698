"""The relay's waves: a subject's rows in separate waves, in order; subjects side by side."""

from __future__ import annotations

from api_shared.events.models import OutboxEvent
from api_shared.events.relay import publication_waves


def rows(*subjects: str) -> list[OutboxEvent]:
    return [
        OutboxEvent(id=number, subject=subject, sequence=number)
        for number, subject in enumerate(subjects, start=1)
    ]


def ids(waves: list[list[OutboxEvent]]) -> list[list[int]]:
    return [[row.id for row in wave] for wave in waves]


def test_rows_of_different_subjects_go_out_in_one_wave() -> None:
    assert ids(publication_waves(rows("a", "b", "c"))) == [[1, 2, 3]]


def test_a_subjects_later_rows_each_wait_for_the_wave_before() -> None:
    waves = publication_waves(rows("a", "b", "a", "a", "c", "b"))
    assert ids(waves) == [[1, 2, 5], [3, 6], [4]]


def test_no_rows_no_waves() -> None:
    assert publication_waves([]) == []
