"""argparse value types shared by the subcommands."""

from __future__ import annotations

import argparse
from typing import Callable


def int_at_least(what: str, lo: int) -> Callable[[str], int]:
    """An integer option >= lo; argparse turns the error into a one-line usage error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, not '{text}'") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"{what} must be at least {lo}, not {value}")
        return value
    return parse
