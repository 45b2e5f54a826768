"""A progress bar over test points, with an estimate of the time left.

On a terminal it redraws one line; otherwise (CI logs, pipes) it prints a line
every tenth of the way, so logs stay short but show that work goes on. Nothing
else is printed between its updates: what happens to single points (a point
measured before a steady state, a failure) is counted on the line and kept for
`notices()`, which the campaign lists once at its end; `verbose` also prints
each as it happens, above the bar.

The estimate comes from a `clock` when one is given (collkit.launch.eta: each
point left estimated from the costs of the points most like it), else from the
rate of the points done so far."""

from __future__ import annotations

import sys
import time
from typing import Protocol


class Clock(Protocol):
    """What the estimate is told as a campaign runs (collkit.launch.eta.CampaignClock);
    remaining_s() leaves out the work of unmeasured() (named on the line instead)."""

    def unmeasured(self) -> list[str]: ...

    def launch_started(self, points: list, repeat: int = 0) -> None: ...

    def add(self, repeat: int, points: list) -> None: ...

    def launch_up(self) -> None: ...

    def points_done(self, point_ids: list[str]) -> None: ...

    def remaining_s(self) -> float | None: ...


def duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    def __init__(self, total: int, done: int = 0, stream=None, width: int = 28, unit: str = "points",
                 clock: Clock | None = None, verbose: bool = False):
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
        self.clock = clock
        self.verbose = verbose
        self.counts: dict[str, int] = {}        # kind of notice -> how many
        self._notices: list[tuple[str, str]] = []

    def eta(self) -> str:
        left = self.clock.remaining_s() if self.clock is not None else None
        if left is None:
            ran = self.done - self._start_done
            if ran <= 0:
                return "?"
            return duration((time.monotonic() - self.start) / ran * (self.total - self.done))
        unknown = self.clock.unmeasured()
        return duration(left) + (f" + {', '.join(unknown)} (not measured yet)" if unknown else "")

    def line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        counted = "".join(f"  {n} {kind}" for kind, n in self.counts.items())
        return f"[{bar}] {self.done}/{self.total} {self.unit}  ETA {self.eta()}{counted}  {self.current}"

    # what a launcher tells the clock (nothing without one)
    def launch_started(self, points: list, repeat: int = 0) -> None:
        if self.clock is not None:
            self.clock.launch_started(points, repeat)

    def grow(self, repeat: int, points: list) -> None:
        """Work decided on the way (an adaptive round's launch, launch/schedule.py)."""
        self.total += len(points)
        if self.clock is not None:
            self.clock.add(repeat, points)

    def launch_up(self) -> None:
        if self.clock is not None:
            self.clock.launch_up()

    def points_done(self, point_ids: list[str]) -> None:
        if self.clock is not None and point_ids:
            self.clock.points_done(point_ids)

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

    def count(self, kind: str, text: str, points: int = 1) -> None:
        """Something that happened to points (kind: 'unstable', 'failed', ...):
        counted on the line, kept for notices(), printed at once only when verbose."""
        self.counts[kind] = self.counts.get(kind, 0) + points
        self._notices.append((kind, text))
        if self.verbose:
            self.note(text)
        elif self.tty:
            self._draw()

    def notices(self, kind: str | None = None) -> list[str]:
        """What count() was told, in order (of one kind, or all)."""
        return [text for k, text in self._notices if kind is None or k == kind]

    def note(self, text: str) -> None:
        """A message that must stay visible, above the bar."""
        if self.tty:
            self.stream.write("\r\033[K")
        print(text, file=self.stream, flush=True)
        if self.tty:
            self._draw()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        counted = "".join(f", {n} {kind}" for kind, n in self.counts.items())
        print(f"{self.done}/{self.total} {self.unit} in {duration(time.monotonic() - self.start)}{counted}",
              file=self.stream, flush=True)

    def _draw(self) -> None:
        text = self.line()
        self.stream.write("\r\033[K" + text[:200])
        self.stream.flush()
