"""The statistics of `collkit tune --validate` over repeated launches (tune/validate.py).

One launch is one sample. Iterations inside a launch share its process placement,
its neighbours on the cores and its warm-up, so on a loaded or oversubscribed machine
two launches of the same code differ far more than the iterations of one (issue 16's
first round: 0.01x to 150x). A test on iterations then calls that launch noise a
difference. Here the sample of a (point, variant) is its launch medians, one per
repeat, and every test and interval is over launches:

* `exact_mann_whitney`: the two-sided Mann-Whitney U test with the exact permutation
  distribution of the rank sum (ties as midranks), right for the few launches a side
  that the normal approximation of analysis/stats.py gets wrong.
* `bootstrap_ratios`: resampled ratios of medians, launches drawn with replacement
  per side; the percentile interval of a point, and of the median over points.
* Selection and comparison use different launches: the best forced algorithm of a
  point is the one with the lowest median over the selection repeats (the 1st, 3rd,
  ...), and the regret compares it with tuned over the other repeats. Picking the
  minimum of a dozen noisy algorithms and comparing on the same launches would
  favour whichever happened to be lucky (the winner's curse) and inflate the regret;
  `Summary.same_sample_vs_best` shows by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from collkit.analysis import stats

RESAMPLES = 2000
GOAL = 1.05   # issue 16: median regret at most 5 % above the best forced


def selection_repeats(n: int) -> list[int]:
    return list(range(0, n, 2))


def comparison_repeats(n: int) -> list[int]:
    return list(range(1, n, 2))


def forward(k: int) -> bool:
    """Variant order of repeat k (0-based): forward, reverse, reverse, forward, ...
    (ABBA), so both the selection and the comparison repeats hold both orders."""
    return k % 4 in (0, 3)


# --------------------------------------------------------------- exact test
exact_mann_whitney = stats.exact_mann_whitney   # its home: analysis/stats.py
min_p = stats.min_p


# --------------------------------------------------------------- bootstrap
def bootstrap_ratios(news: list[np.ndarray], bases: list[np.ndarray], rng: np.random.Generator,
                     resamples: int = RESAMPLES) -> np.ndarray:
    """(points, resamples): median(new) / median(base) with each side's launches drawn
    with replacement; NaN where a side is empty."""
    out = np.full((len(news), resamples), np.nan)
    for i, (a, b) in enumerate(zip(news, bases)):
        if len(a) == 0 or len(b) == 0:
            continue
        ma = np.median(a[rng.integers(0, len(a), (resamples, len(a)))], axis=1)
        mb = np.median(b[rng.integers(0, len(b), (resamples, len(b)))], axis=1)
        out[i] = ma / mb
    return out


def _interval(v: np.ndarray) -> tuple[float, float]:
    tail = (1 - stats.CONFIDENCE) / 2
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (math.nan, math.nan)
    return float(np.quantile(v, tail)), float(np.quantile(v, 1 - tail))


# --------------------------------------------------------------- per point
@dataclass
class Launched:
    """One variant at one point: its launch median per repeat (0-based index -> us)."""
    algorithm: str
    medians: dict[int, float] = field(default_factory=dict)
    implausible: bool = False

    def at(self, repeats: Sequence[int]) -> np.ndarray:
        return np.array([self.medians[k] for k in repeats if k in self.medians], dtype=float)


@dataclass(frozen=True)
class Comparison:
    """tuned against one other variant at one point, over the launches named."""
    ratio: float                  # median tuned / median other
    ci: tuple[float, float]       # percentile bootstrap over launches
    p: float                      # exact Mann-Whitney on launch medians, Holm over the points
    launches: tuple[int, int]     # launches of tuned, of the other

    @property
    def verdict(self) -> str:
        if self.p < stats.ALPHA:
            return "slower" if self.ratio > 1 else "faster"
        return "tie"


@dataclass(frozen=True)
class Row:
    collective: str
    ranks: int
    bytes: int
    tuned_us: float               # median of tuned's launch medians, every repeat
    best: str                     # the fastest forced algorithm over the selection repeats
    best_us: float                # its median over the comparison repeats
    vs_best: Comparison           # comparison repeats only
    default_us: float             # every repeat
    vs_default: Comparison        # every repeat
    chosen: str = ""              # what the file chose here ("default" or a forced name)
    vs_chosen: Comparison | None = None   # every repeat; a significant difference means the
                                          # library did not run what the file says


@dataclass(frozen=True)
class Summary:
    points: int
    repeats: int
    vs_best: float                        # median over points of tuned / best forced
    vs_best_ci: tuple[float, float]
    same_sample_vs_best: float            # the same, best chosen and compared on every launch
    worse_than_best: int
    vs_default: float
    vs_default_ci: tuple[float, float]
    worse_than_default: int
    default_ci_above_1: int               # points whose own interval lies above 1 (no adjustment)
    min_adjusted_p_best: float            # the smallest Holm-adjusted p the launches allow
    min_adjusted_p_default: float
    chosen_points: int = 0
    chosen_differs: int = 0
    chosen_ratio: float = math.nan

    @property
    def meets_regret(self) -> bool:
        """Issue 16: median regret at most 5 %, or not significantly above 1."""
        return self.vs_best <= GOAL or self.vs_best_ci[0] <= 1.0

    @property
    def default_testable(self) -> bool:
        return self.min_adjusted_p_default < stats.ALPHA

    @property
    def meets_default(self) -> bool | None:
        """Never significantly worse than the default: False where a point is, or the
        median over points is (its interval above 1); None where the launches are too
        few for any single point to reach significance after Holm; else True."""
        if self.worse_than_default or self.vs_default_ci[0] > 1.0:
            return False
        if not self.default_testable:
            return None
        return True


Choice = Callable[[str, int, int], str]


def analyse(points: dict[tuple[str, int, int], dict[str, Launched]], repeats: int,
            choice: Choice | None = None, seed: int = stats.SEED) -> tuple[list[Row], Summary | None]:
    """points: (collective, ranks, bytes) -> algorithm -> launches; algorithms "default",
    "tuned:FILE" and the forced names. Points without tuned, default or a forced
    algorithm measured in both halves are left out."""
    sel, cmp_ = selection_repeats(repeats), comparison_repeats(repeats)
    every = list(range(repeats))
    keys, parts = [], []
    for key in sorted(points):
        algs = points[key]
        tuned = next((v for a, v in algs.items() if a.startswith("tuned:")), None)
        default = algs.get("default")
        forced = [v for a, v in algs.items()
                  if a != "default" and not a.startswith("tuned:") and not v.implausible
                  and len(v.at(sel)) and len(v.at(cmp_))]
        if tuned is None or default is None or not forced or not len(tuned.at(cmp_)):
            continue
        best = min(forced, key=lambda v: (float(np.median(v.at(sel))), v.algorithm))
        naive = min(forced, key=lambda v: (float(np.median(v.at(every))), v.algorithm))
        chosen = choice(*key) if choice else ""
        keys.append(key)
        parts.append((tuned, default, best, naive, chosen, algs.get(chosen)))
    if not keys:
        return [], None
    rng = np.random.default_rng(seed)
    t_cmp = [t.at(cmp_) for t, *_ in parts]
    b_cmp = [b.at(cmp_) for _, _, b, *_ in parts]
    t_all = [t.at(every) for t, *_ in parts]
    d_all = [d.at(every) for _, d, *_ in parts]
    boot_b = bootstrap_ratios(t_cmp, b_cmp, rng)
    boot_d = bootstrap_ratios(t_all, d_all, rng)
    p_b = stats.holm([exact_mann_whitney(a, b) for a, b in zip(t_cmp, b_cmp)])
    p_d = stats.holm([exact_mann_whitney(a, b) for a, b in zip(t_all, d_all)])
    with_c = [i for i, part in enumerate(parts) if part[5] is not None]
    c_all = {i: parts[i][5].at(every) for i in with_c}
    p_c = dict(zip(with_c, stats.holm([exact_mann_whitney(t_all[i], c_all[i]) for i in with_c])))
    boot_c = dict(zip(with_c, bootstrap_ratios([t_all[i] for i in with_c], [c_all[i] for i in with_c], rng)))

    def comp(a, b, boot, p):
        return Comparison(float(np.median(a) / np.median(b)), _interval(boot), float(p), (len(a), len(b)))

    rows = []
    for i, (key, (tuned, default, best, _, chosen, ch)) in enumerate(zip(keys, parts)):
        vc = comp(t_all[i], c_all[i], boot_c[i], p_c[i]) if i in with_c else None
        rows.append(Row(*key, float(np.median(t_all[i])), best.algorithm, float(np.median(b_cmp[i])),
                        comp(t_cmp[i], b_cmp[i], boot_b[i], p_b[i]), float(np.median(d_all[i])),
                        comp(t_all[i], d_all[i], boot_d[i], p_d[i]), chosen, vc))
    m = len(rows)
    naive = [float(np.median(t.at(every)) / np.median(nv.at(every))) for t, _, _, nv, *_ in parts]
    n_t_cmp = min(len(a) for a in t_cmp)
    n_b_cmp = min(len(b) for b in b_cmp)
    n_t_all = min(len(a) for a in t_all)
    n_d_all = min(len(d) for d in d_all)
    same = [r.vs_chosen for r in rows if r.vs_chosen is not None]
    summary = Summary(
        points=m, repeats=repeats,
        vs_best=float(np.median([r.vs_best.ratio for r in rows])),
        vs_best_ci=_interval(np.nanmedian(boot_b, axis=0)),
        same_sample_vs_best=float(np.median(naive)),
        worse_than_best=sum(r.vs_best.verdict == "slower" for r in rows),
        vs_default=float(np.median([r.vs_default.ratio for r in rows])),
        vs_default_ci=_interval(np.nanmedian(boot_d, axis=0)),
        worse_than_default=sum(r.vs_default.verdict == "slower" for r in rows),
        default_ci_above_1=sum(r.vs_default.ci[0] > 1 for r in rows),
        min_adjusted_p_best=min(1.0, m * min_p(n_t_cmp, n_b_cmp)),
        min_adjusted_p_default=min(1.0, m * min_p(n_t_all, n_d_all)),
        chosen_points=len(same), chosen_differs=sum(c.p < stats.ALPHA for c in same),
        chosen_ratio=float(np.median([c.ratio for c in same])) if same else math.nan)
    return rows, summary
