"""`collkit trial`'s run order and its verdicts, apart from any launching.

Order. Runs alternate in ABBA blocks (default, choice, choice, default, ...):
pair i runs default first when i is even and the choice first when i is odd.
Strict alternation (ABAB) would always run the choice right after the default,
so anything a run leaves to the next one (warm file caches, a heating CPU,
another job's load rising) would favour one variant; in an ABBA block a linear
drift adds the same to both variants' mean position (1 + 4 = 2 + 3), and each
variant follows each variant equally often. The order is fixed rather than
random so that two trials of one program are comparable run by run.

Verdict. Per measure, the two-sided Mann-Whitney U test (analysis/stats.py)
between the variants' runs at 5 %: "faster" or "slower" (the choice's runs
tend to be shorter or longer: the side U falls on) where p < 0.05, "tie"
otherwise. Each measure is a question of its own (wall time is the verdict
that counts, time in collectives says why), so no multiple-test adjustment.

Minimum runs. MIN_RUNS is the smallest number of runs per variant at which two
samples that do not overlap at all reach p < 0.05; below it the test could not
call any difference, however large. Medians' 95 % intervals need 6 runs
(stats.median_ci); with fewer the table shows none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from collkit.analysis import stats

ALPHA = 0.05
DEFAULT, CHOICE = "default", "choice"
MAX_RUNS = 1000


def balanced_order(pairs: int) -> list[str]:
    """The variants of 2 * pairs runs in ABBA blocks, default first."""
    out: list[str] = []
    for i in range(pairs):
        out += [DEFAULT, CHOICE] if i % 2 == 0 else [CHOICE, DEFAULT]
    return out


def _p(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    u, p = stats.mann_whitney([list(xs)], [list(ys)])
    return float(u[0]), float(p[0])


def _min_runs() -> int:
    n = 2
    while _p(range(n), range(n, 2 * n))[1] >= ALPHA:
        n += 1
    return n


MIN_RUNS = _min_runs()


@dataclass(frozen=True)
class Comparison:
    measure: str
    default_median: float
    default_ci: tuple[float, float] | None
    choice_median: float
    choice_ci: tuple[float, float] | None
    ratio: float | None          # choice median / default median
    p: float
    verdict: str                 # "faster" | "slower" | "tie"

    def to_json(self) -> dict:
        return {"measure": self.measure, "default_median_s": self.default_median,
                "default_ci_s": list(self.default_ci) if self.default_ci else None,
                "choice_median_s": self.choice_median,
                "choice_ci_s": list(self.choice_ci) if self.choice_ci else None,
                "ratio": self.ratio, "p": self.p, "verdict": self.verdict}


def compare(measure: str, default: Sequence[float], choice: Sequence[float]) -> Comparison:
    """The verdict on one measure from each variant's runs (both non-empty)."""
    u, p = _p(default, choice)
    half = len(default) * len(choice) / 2
    verdict = "tie"
    if p < ALPHA and u != half:
        # U counts the pairs where the default's run is the longer one.
        verdict = "faster" if u > half else "slower"
    dm, cm = float(np.median(default)), float(np.median(choice))
    return Comparison(measure=measure, default_median=dm, default_ci=stats.median_ci(default),
                      choice_median=cm, choice_ci=stats.median_ci(choice),
                      ratio=cm / dm if dm > 0 else None, p=p, verdict=verdict)
