"""Comparisons at the level the machine varies: the one test behind every verdict.

A launch draws a machine state that lasts the whole launch (campaign/repeats.py), so
iterations of different launches are not samples of one distribution: pooling them
called "significant" what was only the state each launch drew (issue #54). Nor are
the iterations of one point samples of how it compares with another: the two run
one after the other, each for a fraction of a second, and the machine moves in
between. Issue #54's experiment on this machine (Open MPI, 2 ranks bound to cores,
1 MiB allreduce, the default and four forced algorithms, all in one launch): the
ratio of the default's median to ring's moved from 0.86 to 1.23 from launch to
launch, with hundreds of iterations behind each side; a test on the iterations
inside each launch called 1-3 % differences "significant" in 7 of 10 identical
campaigns (van Elteren's stratified test) and in 2 of 10 when every launch had to
agree; launches as blocks (below) tied in 10 of 10. So every comparison of two points (summary, compare, tune, the HTML report)
goes through `compare_points`, which tests at the level the two vary:

* **inside the same launches** (both points ran in two or more launches together:
  libcollkit's algorithms, the library's default and its forced algorithms where the
  library switches them inside a launch): launches are blocks. Per shared launch the
  log ratio of the two medians (the launch's state is common to both and cancels);
  their mean tested with Student's t against how much such ratios move from launch
  to launch, pooled over the comparisons of a group (one summary row: every
  candidate against its default), as a randomized complete block design is analysed
  (analysis/stats.blocked_t);
* **inside one launch** (the only one both ran in): its iterations (Mann-Whitney),
  which is all there is; the verdict says so;
* **in different launches** (another campaign, a forcing the library reads only at
  start-up, a tuning file): the exact Mann-Whitney test on the launch medians, one
  sample per launch. It needs launches: with n1 and n2 of them no p below
  2 / C(n1 + n2, n1) exists (3 + 3: 0.1; 5 + 5: 0.008), and a verdict that cannot
  reach the level says so (`Test.too_few`);
* **simulated** (both deterministic, one launch each): the iterations, as they are
  the same in every launch.

`Timing` is what a record holds of a point's times by launch; `estimate` is the
median of the launch medians, the interval stats.launch_interval, `spread` the
largest over the smallest launch median and `states` a mark when the launch
medians fall apart into groups (a gap between neighbours larger than STATE_GAP and
than twice the spread on either side of it)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np

from collkit.analysis import stats

WITHIN = "within"        # launch-by-launch ratios in shared launches (launches as blocks)
ONE_LAUNCH = "one"       # the iterations of the one launch both ran in
BETWEEN = "between"      # launch medians
SIMULATED = "simulated"  # iterations of deterministic launches
LEVEL_WORDS = {WITHIN: "launch-by-launch ratios in shared launches (launches as blocks, Student's t)",
               ONE_LAUNCH: "the iterations of the one launch both ran in",
               BETWEEN: "launch medians (exact Mann-Whitney)",
               SIMULATED: "iterations of deterministic simulated launches"}
STATE_GAP = 1.5          # neighbouring launch medians this far apart: separate states


@dataclass(frozen=True)
class Timing:
    """A point's times by launch: launch identities (campaign, number), the median and
    iterations of each, and whether the times are deterministic (simulated)."""
    launches: tuple[tuple[str, int], ...]
    medians: tuple[float, ...]
    times: tuple[tuple[float, ...], ...]
    simulated: bool = False

    @classmethod
    def of(cls, record, campaign: str = "") -> "Timing":
        """From a campaign Record (campaign/record.py); `campaign` tells launches of
        different campaigns apart."""
        medians = tuple(record.launch_medians)
        numbers = record.launch_numbers
        times = record.launch_times
        return cls(tuple((campaign, n) for n in numbers), medians,
                   tuple(tuple(t) for t in times), record.simulated)

    @property
    def n(self) -> int:
        return len(self.medians)

    @property
    def estimate(self) -> float:
        return statistics.median(self.medians) if self.medians else math.nan

    @property
    def interval(self) -> tuple[float, float] | None:
        return stats.launch_interval(self.medians)

    @property
    def spread(self) -> float | None:
        """Largest over smallest launch median (None below two launches)."""
        if self.n < 2 or min(self.medians) <= 0:
            return None
        return max(self.medians) / min(self.medians)

    @property
    def states(self) -> bool:
        return separate_states(self.medians)


def separate_states(medians) -> bool:
    """Whether sorted launch medians split into a low and a high group: a gap of at
    least STATE_GAP between neighbours that is also more than twice the spread of the
    launches on either side (two launches 25 % apart are two states; a steady drift
    is not)."""
    x = sorted(m for m in medians if m > 0)
    best = False
    for i in range(1, len(x)):
        gap = x[i] / x[i - 1]
        low, high = x[i - 1] / x[0], x[-1] / x[i]
        if gap >= STATE_GAP and math.log(gap) > 2 * max(math.log(low), math.log(high)):
            best = True
    return best


@dataclass(frozen=True)
class Test:
    """One comparison: p, the level it was tested at, the launches on each side (for
    WITHIN: the shared ones, twice), and the smallest p its design allows."""
    p: float
    level: str
    launches: tuple[int, int]
    min_p: float

    def too_few(self, alpha: float = stats.ALPHA) -> bool:
        """No outcome of the launches could be significant at alpha (before any
        correction for many comparisons)."""
        return self.min_p >= alpha

    def describe(self) -> str:
        a, b = self.launches
        if self.level == WITHIN:
            return f"inside {a} shared launches"
        if self.level == ONE_LAUNCH:
            return "inside one launch (iterations)"
        if self.level == SIMULATED:
            return "simulated"
        return f"{a} + {b} launches"


def needed_launches(alpha: float = stats.ALPHA) -> int:
    """Launches a side for which the exact launch test can reach alpha at all."""
    n = 1
    while stats.min_p(n, n) >= alpha:
        n += 1
    return n


def compare_points(pairs: list[tuple[Timing, Timing]], groups: list[object] | None = None) -> list[Test]:
    """The test of each pair (a, b), two-sided, uncorrected (the caller corrects over
    its family, Holm). `groups`: which pairs pool their launch-to-launch variance
    (inside shared launches; the pairs of one summary row); None: each pair alone."""
    groups = list(range(len(pairs))) if groups is None else list(groups)
    out: list[Test | None] = [None] * len(pairs)
    blocked: list[tuple[int, int]] = []
    diffs: list[list[float]] = []
    block_groups: list[object] = []
    one_x, one_y, one = [], [], []
    sim_x, sim_y, sim = [], [], []
    for i, (a, b) in enumerate(pairs):
        if a.n == 0 or b.n == 0:
            out[i] = Test(1.0, BETWEEN, (a.n, b.n), 1.0)
            continue
        shared = [k for k in sorted(set(a.launches) & set(b.launches))
                  if a.medians[a.launches.index(k)] > 0 and b.medians[b.launches.index(k)] > 0]
        if len(shared) >= 2:
            blocked.append((i, len(shared)))
            diffs.append([math.log(a.medians[a.launches.index(k)] / b.medians[b.launches.index(k)]) for k in shared])
            block_groups.append(groups[i])
        elif shared and a.times[a.launches.index(shared[0])] and b.times[b.launches.index(shared[0])]:
            one.append(i)
            one_x.append(a.times[a.launches.index(shared[0])])
            one_y.append(b.times[b.launches.index(shared[0])])
        elif a.simulated and b.simulated and a.times and b.times and a.times[0] and b.times[0]:
            sim.append(i)
            sim_x.append(a.times[0])
            sim_y.append(b.times[0])
        else:
            out[i] = Test(stats.exact_mann_whitney(a.medians, b.medians), BETWEEN, (a.n, b.n),
                          stats.min_p(a.n, b.n))
    if blocked:
        pooled_df = {}
        for d, g in zip(diffs, block_groups):
            pooled_df[g] = pooled_df.get(g, 0) + len(d) - 1
        _, p = stats.blocked_t(diffs, block_groups)
        for (i, shared), q, g in zip(blocked, p, block_groups):
            out[i] = Test(float(q), WITHIN, (shared, shared), 0.0 if pooled_df[g] else 1.0)
    for idx, xs, ys, level in ((one, one_x, one_y, ONE_LAUNCH), (sim, sim_x, sim_y, SIMULATED)):
        if idx:
            _, p = stats.mann_whitney(xs, ys)
            for i, q in zip(idx, p):
                out[i] = Test(float(q), level, (1, 1), 0.0)
    return [t for t in out if t is not None]


def holm(tests: list[Test]) -> np.ndarray:
    """Holm-adjusted p-values of a family of tests."""
    return stats.holm([t.p for t in tests])


def launches_for(comparisons: int, alpha: float = stats.ALPHA) -> int:
    """Launches a side for which the smallest p of the exact launch test, Holm-adjusted
    over `comparisons` tests, is below alpha: what a family of that size needs."""
    n = 1
    while comparisons * stats.min_p(n, n) >= alpha and n < 100:
        n += 1
    return n


RESAMPLES = 2000


def ratio_interval(base: Timing, new: Timing, seed: int = stats.SEED) -> tuple[float, float] | None:
    """A 95 % percentile-bootstrap interval of estimate(new) / estimate(base) over
    launches: each side's launch medians drawn with replacement (the launch is the
    sample); None below two launches on a side (one launch says nothing of the next)."""
    if base.n < 2 or new.n < 2:
        return None
    rng = np.random.default_rng(seed)
    b = np.asarray(base.medians, float)
    n = np.asarray(new.medians, float)
    mb = np.median(b[rng.integers(0, len(b), (RESAMPLES, len(b)))], axis=1)
    mn = np.median(n[rng.integers(0, len(n), (RESAMPLES, len(n)))], axis=1)
    tail = (1 - stats.CONFIDENCE) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mn / mb
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None
    return float(np.quantile(r, tail)), float(np.quantile(r, 1 - tail))


def ratios(pairs: list[tuple[Timing, Timing]], groups: list[object] | None = None
           ) -> list[tuple[float, tuple[float, float] | None]]:
    """a over b for each pair, with a 95 % interval at the level compare_points tests
    them: inside two or more shared launches, the mean log ratio and its standard
    error from the group's pooled launch-to-launch variance (the verdict's own), with
    Student's t; otherwise estimate(a) / estimate(b) and the bootstrap over each
    side's launches (None below two launches a side)."""
    groups = list(range(len(pairs))) if groups is None else list(groups)
    diffs, owners = [], []
    out: list[tuple[float, tuple[float, float] | None]] = []
    for i, (a, b) in enumerate(pairs):
        shared = [k for k in sorted(set(a.launches) & set(b.launches))
                  if a.medians[a.launches.index(k)] > 0 and b.medians[b.launches.index(k)] > 0]
        if len(shared) >= 2:
            diffs.append([math.log(a.medians[a.launches.index(k)] / b.medians[b.launches.index(k)]) for k in shared])
            owners.append(i)
        out.append(((a.estimate / b.estimate if b.estimate else math.nan), ratio_interval(b, a)))
    for i, (mean, se, df) in zip(owners, stats.blocked(diffs, [groups[i] for i in owners])):
        if math.isnan(se):
            out[i] = (math.exp(mean), None)
        else:
            half = stats.t_quantile(1 - stats.CONFIDENCE, df) * se
            out[i] = (math.exp(mean), (math.exp(mean - half), math.exp(mean + half)))
    return out
