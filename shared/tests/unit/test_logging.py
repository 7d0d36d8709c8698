"""JSON lines: the access line's short way writes what the JSON formatter would."""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from api_shared.logging import (
    JsonFormatter,
    LineWriter,
    access_logger,
    configure_logging,
    log_access_line,
)
from api_shared.request_id import current_request_id

FIELDS: dict[str, Any] = {
    "requestId": "req-1",
    "method": "GET",
    "path": "/api/users/u-1",
    "status": 200,
    "durationMs": 1.234,
    "client": "127.0.0.1",
    "subject": "u-1",
    "upstream": None,
    "upstreamDurationMs": None,
    "responseBytes": 42,
}


@pytest.fixture
def output(tmp_path: Path) -> Iterator[Path]:
    """A file configure_logging writes to, as it would to stdout; logging restored after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    path = tmp_path / "out.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    # pytest puts its own warnings.showwarning back after each test: a capture an earlier
    # test left on is undone, though logging believes it on (captureWarnings would do nothing).
    logging.captureWarnings(False)
    try:
        configure_logging("svc", "INFO", fd=fd)
        yield path
    finally:
        root.handlers[:], root.level = handlers, level
        logging.captureWarnings(False)
        os.close(fd)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_the_access_line_has_the_fields_the_formatter_would_write_in_its_order(
    output: Path,
) -> None:
    token = current_request_id.set("req-1")
    try:
        log_access_line(FIELDS)
        record = access_logger.makeRecord(
            access_logger.name, logging.INFO, "", 0, "request", (), None, extra=FIELDS
        )
        formatted = orjson.loads(JsonFormatter("svc").format(record))
    finally:
        current_request_id.reset(token)

    (line,) = lines_of(output)
    assert list(line) == list(formatted)
    assert {k: v for k, v in line.items() if k != "time"} == {
        k: v for k, v in formatted.items() if k != "time"
    }
    assert "upstream" not in line  # None is left out, as the formatter leaves it out


def test_the_time_is_utc_to_the_millisecond(output: Path) -> None:
    log_access_line(FIELDS)

    (line,) = lines_of(output)
    assert len(line["time"]) == len("2026-01-02T03:04:05.678+00:00")
    assert line["time"].endswith("+00:00")


def test_at_warning_no_access_line_is_written(tmp_path: Path) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    path = tmp_path / "out.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        configure_logging("svc", "WARNING", fd=fd)
        log_access_line(FIELDS)
        logging.getLogger("tests.logging").warning("careful", extra={"thing": 1})
    finally:
        root.handlers[:], root.level = handlers, level
        os.close(fd)

    (line,) = lines_of(path)
    assert line["message"] == "careful"
    assert line["level"] == "warning"
    assert line["thing"] == 1


def test_other_records_and_access_lines_go_to_the_same_output_in_order(output: Path) -> None:
    logging.getLogger("tests.logging").info("before")
    log_access_line(FIELDS)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("tests.logging").exception("after")

    before, access, after = lines_of(output)
    assert (before["message"], access["message"], after["message"]) == (
        "before",
        "request",
        "after",
    )
    assert access["logger"] == "api_shared.logging.access"
    assert "ValueError: boom" in after["traceback"]


def test_an_added_handler_receives_the_access_line_as_a_record(output: Path) -> None:
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Collect()
    logging.getLogger().addHandler(handler)
    try:
        log_access_line(FIELDS)
    finally:
        logging.getLogger().removeHandler(handler)

    (record,) = seen
    assert record.__dict__["path"] == "/api/users/u-1"
    assert lines_of(output)[0]["path"] == "/api/users/u-1"  # and stdout still has it


def test_a_line_larger_than_a_pipe_takes_is_written_whole() -> None:
    read_end, write_end = os.pipe()
    line = b"x" * (1 << 20) + b"\n"
    received = bytearray()

    def read_all() -> None:  # meanwhile the writer blocks on a full pipe and resumes
        while chunk := os.read(read_end, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    LineWriter(write_end).write(line)
    os.close(write_end)
    reader.join()
    os.close(read_end)
    assert bytes(received) == line


def test_a_failed_write_does_not_break_the_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: every write fails (EPIPE; Python ignores SIGPIPE)
    try:
        configure_logging("svc", "INFO", fd=write_end)
        log_access_line(FIELDS)
    finally:
        root.handlers[:], root.level = handlers, level
        os.close(write_end)

    assert "BrokenPipeError" in capsys.readouterr().err  # reported as logging reports it


def test_a_python_warning_is_a_json_line_too(output: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite turns warnings into errors
        warnings.warn("a listener that takes the loop", DeprecationWarning, stacklevel=1)

    (line,) = lines_of(output)
    assert (line["level"], line["logger"], line["service"]) == ("warning", "py.warnings", "svc")
    assert "DeprecationWarning: a listener that takes the loop" in line["message"]
