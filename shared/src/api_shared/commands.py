"""Options the services' own batch commands share (``seed``, ``import``): batch size, progress."""

from __future__ import annotations

import argparse


def add_batch_options(parser: argparse.ArgumentParser, *, default_batch_size: int) -> None:
    """``--batch-size N`` and ``--progress``/``--no-progress`` (``None`` when not given)."""
    parser.add_argument("--batch-size", type=int, default=default_batch_size)
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )
