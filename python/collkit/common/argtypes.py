"""argparse value types shared by the subcommands."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

from collkit.common.safe import control_character


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


def int_range(what: str, lo: int, hi: int) -> Callable[[str], int]:
    """An integer option in [lo, hi]."""
    at_least = int_at_least(what, lo)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"{what} must be at most {hi}, not {value}")
        return value
    return parse


def seconds(what: str, lo_exclusive: float, hi: float) -> Callable[[str], float]:
    """A finite number of seconds in (lo_exclusive, hi]: nan, inf and 0 are refused
    where they would switch a watchdog off or make every launch time out."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number of seconds, not '{text}'") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number of seconds, not '{text}'")
        if value <= lo_exclusive or value > hi:
            raise argparse.ArgumentTypeError(f"{what} must be above {lo_exclusive:g} and at most {hi:g} s, "
                                             f"not {value:g}")
        return value
    return parse


# The longest any command waits for a program it starts: a batch job rarely
# runs a week, so a longer limit is more likely a slip than a wish.
LONGEST_WAIT_S = 7 * 86400.0


def timeout(what: str = "--timeout") -> Callable[[str], float]:
    """A program's time limit in seconds: finite, above 0, at most a week."""
    return seconds(what, 0.0, LONGEST_WAIT_S)


def nonempty_path(what: str) -> Callable[[str], Path]:
    """A path option that must name something: an empty string would mean the
    current directory, which is never what a user asked for."""
    def parse(text: str) -> Path:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{what} needs a path, not an empty string")
        if control_character(text):
            raise argparse.ArgumentTypeError(f"{what} must not contain control characters")
        return Path(text)
    return parse
