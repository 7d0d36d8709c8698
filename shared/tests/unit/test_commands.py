"""The batch commands' shared options: a batch size with the command's default, and a
progress bar that is on, off, or left to whether stderr is a terminal."""

from __future__ import annotations

import argparse

import pytest

from api_shared.commands import add_batch_options


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_batch_options(parser, default_batch_size=500)
    return parser.parse_args(argv)


def test_without_options_the_batch_size_is_the_commands_and_progress_is_left_open() -> None:
    args = parse()

    assert (args.batch_size, args.progress) == (500, None)


@pytest.mark.parametrize(("flag", "progress"), [("--progress", True), ("--no-progress", False)])
def test_a_batch_size_and_a_progress_choice_are_read(flag: str, progress: bool) -> None:
    args = parse("--batch-size", "7", flag)

    assert (args.batch_size, args.progress) == (7, progress)
