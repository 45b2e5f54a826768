"""A progress bar over test points, with an estimate of the time left.

On a terminal it redraws one line; otherwise (CI logs, pipes) it prints a line
every few percent so logs stay short but show that work goes on."""

from __future__ import annotations

import sys
import time


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    def __init__(self, total: int, done: int = 0, stream=None, width: int = 28, unit: str = "points"):
        self.total = total
        self.unit = unit
        self.done = done
        self._start_done = done
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.start = time.monotonic()
        self._last_pct_printed = -1
        self.current = ""

    def eta(self) -> str:
        ran = self.done - self._start_done
        if ran <= 0:
            return "?"
        rate = (time.monotonic() - self.start) / ran
        return _duration(rate * (self.total - self.done))

    def line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        return f"[{bar}] {self.done}/{self.total} {self.unit}  ETA {self.eta()}  {self.current}"

    def working_on(self, what: str) -> None:
        self.current = what
        if self.tty:
            self._draw()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.tty:
            self._draw()
            return
        pct = int(100 * self.done / self.total) if self.total else 100
        if pct // 10 != self._last_pct_printed // 10 or self.done == self.total:
            self._last_pct_printed = pct
            print(self.line(), file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A message that must stay visible (a failure), above the bar."""
        if self.tty:
            self.stream.write("\r\033[K")
        print(text, file=self.stream, flush=True)
        if self.tty:
            self._draw()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        print(f"{self.done}/{self.total} {self.unit} in {_duration(time.monotonic() - self.start)}",
              file=self.stream, flush=True)

    def _draw(self) -> None:
        text = self.line()
        self.stream.write("\r\033[K" + text[:200])
        self.stream.flush()
