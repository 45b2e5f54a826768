"""`collkit trial`'s check that the program's results did not change.

The text checked is the program's standard output, or with --compare-command the
standard output of that command run after each run (for programs that write
their results to files). The values compared are the regular expression's
matches (group 1 where the pattern has a group, else the whole match), or every
whitespace-separated word when no pattern is given. Every run must give the
reference's values (those of the first default run): exactly as text, or with
--compare-rtol X, as numbers within relative X where both sides read as numbers,
since a reduction summed in another order may change a float in its last bits.
With --compare-unordered the values are compared as a multiset (both lists
sorted first): the lines several ranks print reach the launcher's output in an
order that changes from run to run."""

from __future__ import annotations

import math
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from collkit.common.errors import UserError

TAIL = 200   # characters of a failing compare command's standard error shown


@dataclass(frozen=True)
class OutputCheck:
    pattern: re.Pattern | None = None
    command: tuple[str, ...] = ()
    rtol: float | None = None
    unordered: bool = False

    @property
    def active(self) -> bool:
        return self.pattern is not None or bool(self.command)

    def describe(self) -> str:
        what = f"the output of `{shlex.join(self.command)}`" if self.command else "the program's output"
        how = f"matches of /{self.pattern.pattern}/" if self.pattern is not None else "every word"
        exact = f"equal within relative {self.rtol:g}" if self.rtol is not None else "equal as text"
        return f"{how} of {what}, {exact}" + (", in any order" if self.unordered else "")

    def text(self, program_stdout: str) -> str:
        """The text to check after a run: the program's output, or the command's."""
        if not self.command:
            return program_stdout
        try:
            done = subprocess.run(list(self.command), capture_output=True, text=True, errors="replace")
        except OSError as exc:
            raise UserError(f"--compare-command: cannot run '{self.command[0]}' ({exc.strerror}); "
                            "give a command found on PATH or its full path") from None
        if done.returncode != 0:
            tail = " ".join(done.stderr.split())[-TAIL:]
            raise CompareCommandFailed(f"--compare-command exited with status {done.returncode}"
                                       + (f": {tail}" if tail else ""))
        return done.stdout

    def values(self, text: str) -> list[str]:
        if self.pattern is None:
            return text.split()
        group = 1 if self.pattern.groups else 0
        return [m.group(group) or "" for m in self.pattern.finditer(text)]

    def difference(self, reference: list[str], got: list[str]) -> str | None:
        """None when `got` matches `reference`, else what differs first, in words."""
        if len(got) != len(reference):
            return f"{len(got)} values where the reference has {len(reference)}"
        if self.unordered:
            # Sorted as numbers where every value reads as one (so that a
            # tolerance pairs the right values), else as text.
            reference, got = sorted(reference, key=_order), sorted(got, key=_order)
        for i, (a, b) in enumerate(zip(reference, got)):
            if not self._same(a, b):
                return f"value {i + 1} is {b!r} where the reference has {a!r}"
        return None

    def _same(self, a: str, b: str) -> bool:
        if a == b:
            return True
        if self.rtol is None:
            return False
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        return math.isclose(x, y, rel_tol=self.rtol, abs_tol=0.0)


def _order(value: str) -> tuple:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


class CompareCommandFailed(Exception):
    """The compare command failed after a run: the trial stops as on a failed run."""


def from_options(regex: str | None, command: str | None, rtol: float | None,
                 unordered: bool = False) -> OutputCheck:
    pattern = None
    if regex is not None:
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise UserError(f"--compare-regex {regex!r}: not a regular expression ({exc}); "
                            "write a Python regular expression, e.g. 'residual = (\\S+)'") from None
        if pattern.groups > 1:
            raise UserError(f"--compare-regex {regex!r}: {pattern.groups} groups; the values compared "
                            "are group 1's: make the others non-capturing, (?:...)")
    argv: tuple[str, ...] = ()
    if command is not None:
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise UserError(f"--compare-command {command!r}: cannot split it into words ({exc}); "
                            "close the quotes") from None
        if not argv:
            raise UserError("--compare-command is empty; give the command that prints the results")
        if shutil.which(argv[0]) is None:
            raise UserError(f"--compare-command: '{argv[0]}' not found; give a command found on PATH "
                            "or its full path")
    if rtol is not None:
        if pattern is None and not argv:
            raise UserError("--compare-rtol says how to compare the output; give --compare-regex or "
                            "--compare-command too")
        if not (math.isfinite(rtol) and 0 <= rtol < 1):
            raise UserError(f"--compare-rtol {rtol}: give a relative tolerance in [0, 1), e.g. 1e-12")
    if unordered and pattern is None and not argv:
        raise UserError("--compare-unordered says how to compare the output; give --compare-regex or "
                        "--compare-command too")
    return OutputCheck(pattern=pattern, command=argv, rtol=rtol, unordered=unordered)
