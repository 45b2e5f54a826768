"""Statistics on per-iteration times (`times_us`): distribution-free, numpy only.

* `median_ci`: a 95 % confidence interval for the median from order statistics —
  the binomial interval on ranks. The number of iterations below the true median is
  Binomial(n, 1/2) whatever the distribution, so [x_(l), x_(n+1-l)] covers the median
  with probability 1 - 2 P(B <= l - 1); l is the largest rank keeping that >= 95 %.
  Below 6 iterations no pair of ranks reaches 95 %: no interval (None).
* `mann_whitney`: the two-sided Mann-Whitney U test, normal approximation with tie
  correction and continuity correction (as in most references; exact enough for
  n >= 8 per side; only approximate below). Vectorised over many pairs of samples.
* `blocked_t`: paired comparisons with launches as blocks (a randomized complete block
  design): per launch the log ratio of the two sides' medians, so a state that lasts
  a whole launch cancels; their mean tested against how much such ratios move from
  launch to launch (pooled over a group of comparisons), Student's t
  (`t_two_sided`, from the regularized incomplete beta function, `beta_regularized`).
* `exact_mann_whitney`: the two-sided Mann-Whitney U test with the exact permutation
  distribution of the rank sum (ties as midranks), right for the few samples a side
  (launch medians) that the normal approximation gets wrong; `min_p`: the smallest p
  it can give with n1 and n2 samples.
* `signed_rank_p`: the exact two-sided Wilcoxon signed-rank test, for paired
  measurements (log ratios round by round, scripts/bench_same_name.py).
* `holm`: Holm's step-down adjustment of p-values (family-wise error rate, no
  independence assumption, never less powerful than Bonferroni).
* `bootstrap_median_ratio`: a percentile-bootstrap interval for median(new)/median(base)
  from resampled iterations. The median of n values drawn with replacement from a
  sorted sample x is (x[a] + x[b]) / 2 where a, b are the ranks of the draws' middle
  order statistics; draws are floor(n U) for uniform U, so a = floor(n U_(m)), with
  U_(m) ~ Beta(m, n - m + 1), and b = floor(n U_(m+1)) with U_(m+1) = U_(m) +
  (1 - U_(m)) Beta(1, n - m) (for odd n, b = a). Drawing those two directly has exactly
  the distribution of resampling the iterations, at O(resamples) per point instead of
  O(resamples x n), for any n. A fixed seed makes it deterministic.

Why no scipy: these few functions need only the binomial at 1/2, the beta distribution
(numpy's Generator) and erfc, and vectorising across thousands of points matters more
here than a general library's per-call functions.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

CONFIDENCE = 0.95
ALPHA = 0.01
RESAMPLES = 300
SEED = 20261124


# --------------------------------------------------------------- helpers
_erfc_u = np.frompyfunc(math.erfc, 1, 1)


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erfc_u(np.asarray(x, dtype=float)), dtype=float)


@dataclass(frozen=True)
class Samples:
    """Many samples of any lengths as one flat array: sample i is
    flat[start[i]:start[i] + lengths[i]]. Built once, shared by the tests below."""
    flat: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, samples: "Sequence[Sequence[float]] | Samples") -> "Samples":
        if isinstance(samples, Samples):
            return samples
        lengths = np.fromiter(map(len, samples), dtype=np.int64, count=len(samples))
        flat = np.fromiter(itertools.chain.from_iterable(samples), dtype=float, count=int(lengths.sum()))
        return cls(flat, lengths)

    @property
    def start(self) -> np.ndarray:
        return np.cumsum(self.lengths) - self.lengths

    def __len__(self) -> int:
        return len(self.lengths)


def _segment_order(vals: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The permutation that sorts each consecutive segment of `vals` (segments kept in place)."""
    k = len(lengths)
    if k and lengths.min() == lengths.max() and lengths[0] > 0:
        size = int(lengths[0])
        order = np.argsort(vals.reshape(k, size), axis=1, kind="stable")
        return (order + (np.arange(k) * size)[:, None]).ravel()
    # any lengths: sort on (segment, global rank of the value), one integer key
    glob = np.empty(len(vals), dtype=np.int64)
    glob[np.argsort(vals, kind="stable")] = np.arange(len(vals))
    seg = np.repeat(np.arange(k, dtype=np.int64), lengths)
    return np.argsort(seg * max(len(vals), 1) + glob)


def _sort_segments(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each segment of `flat` sorted in place of itself."""
    return flat[_segment_order(flat, lengths)]


# --------------------------------------------------------------- median interval
@lru_cache(maxsize=None)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the order statistics bounding the median's interval,
    or None when n is too small for the confidence asked."""
    if n < 1:
        return None
    # P(B <= k) for B ~ Binomial(n, 1/2), k = 0..n (exact, in log space)
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    cdf = np.cumsum(np.exp(logfact[n] - logfact - logfact[::-1] - n * math.log(2)))
    tail = (1 - confidence) / 2
    ok = np.nonzero(cdf <= tail + 1e-12)[0]       # P(B <= l-1) <= tail, l - 1 = ok
    if ok.size == 0:
        return None
    l = int(ok[-1]) + 1                           # 1-based rank of the lower bound
    return l - 1, n - l


def median_ci(times: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Distribution-free interval for the median of `times` (None below 6 values at 95 %)."""
    x = np.sort(np.asarray(times, dtype=float))
    ranks = median_ci_ranks(len(x), confidence)
    if ranks is None:
        return None
    return float(x[ranks[0]]), float(x[ranks[1]])


# Student's t, two-sided 95 %, for 1..4 degrees of freedom (any t table): the launch
# interval below needs no more, from 6 launches on it is distribution-free.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}
DISTRIBUTION_FREE_LAUNCHES = 6    # the fewest samples with a 95 % order-statistics interval


def launch_interval(medians: Sequence[float]) -> tuple[float, float] | None:
    """A 95 % interval for a point's estimate (the median of its launch medians), from
    the launches: from 6 launches the distribution-free order-statistics interval
    (median_ci); with 2 to 5, where none exists, Student's t on the logs of the launch
    medians (a launch effect assumed symmetric on a log scale: log-normal); None for
    fewer than 2 or values that are not positive."""
    x = np.asarray(medians, dtype=float)
    if len(x) >= DISTRIBUTION_FREE_LAUNCHES:
        return median_ci(x)
    if len(x) < 2 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        return None
    logs = np.log(x)
    half = T975[len(x) - 1] * float(np.std(logs, ddof=1)) / math.sqrt(len(x))
    centre = float(np.mean(logs))
    return float(np.exp(centre - half)), float(np.exp(centre + half))


def record_median_ci(record) -> tuple[float, float] | None:
    """A campaign Record's median interval: from its launches when it ran in several
    (launch_interval; campaign/repeats.py), else from its `times_us` when it has them, else
    its `stats_us.median_ci` (granularity = "none") or the exported columns it was read
    from (results.csv); None for untimed records."""
    if not record.timed:
        return None
    launches = record.fields.get("launch_medians_us")
    if isinstance(launches, list) and len(launches) > 1:
        return launch_interval(launches)    # several launches: the interval is the launches'
    times = record.fields.get("times_us")
    if isinstance(times, list) and times:
        return median_ci(times)
    # granularity = "none": collkit-bench computed it (same rule) and kept no times
    kept = (record.fields.get("stats_us") or {}).get("median_ci") if isinstance(record.fields.get("stats_us"),
                                                                                  dict) else None
    if isinstance(kept, list) and len(kept) == 2:
        return float(kept[0]), float(kept[1])
    lo, hi = record.fields.get("time_median_ci_low_us"), record.fields.get("time_median_ci_high_us")
    try:
        return (float(lo), float(hi)) if lo not in (None, "") and hi not in (None, "") else None
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------- Mann-Whitney U
def _mw_parts(xs: "Sequence[Sequence[float]] | Samples",
              ys: "Sequence[Sequence[float]] | Samples") -> tuple[np.ndarray, ...]:
    """Per pair (xs[i], ys[i]): U of x, its mean and variance under the null (tie
    corrected), n1 and n2; all pairs at once."""
    sx, sy = Samples.of(xs), Samples.of(ys)
    k = len(sx)
    fx, n1, fy, n2 = sx.flat, sx.lengths, sy.flat, sy.lengths
    n = n1 + n2
    if k == 0:
        empty = np.zeros(0)
        return empty, empty, empty, n1, n2
    # one segment per pair: its x values then its y values
    start = np.cumsum(n) - n
    x_pos = np.repeat(start, n1) + np.arange(len(fx)) - np.repeat(np.cumsum(n1) - n1, n1)
    y_pos = np.repeat(start + n1, n2) + np.arange(len(fy)) - np.repeat(np.cumsum(n2) - n2, n2)
    vals = np.empty(len(fx) + len(fy))
    vals[x_pos], vals[y_pos] = fx, fy
    is_x = np.zeros(len(vals), bool)
    is_x[x_pos] = True
    order = _segment_order(vals, n)
    v, x = vals[order], is_x[order]
    g = np.repeat(np.arange(k), n)
    total = len(v)
    pos = np.arange(total)
    change = np.ones(total, bool)
    change[1:] = (v[1:] != v[:-1]) | (g[1:] != g[:-1])
    end = np.ones(total, bool)
    end[:-1] = change[1:]
    first = np.maximum.accumulate(np.where(change, pos, 0))
    last = np.minimum.accumulate(np.where(end, pos, total)[::-1])[::-1]
    seg_start = np.concatenate([[0], np.cumsum(n)[:-1]])[g]
    avg_rank = (first + last) / 2.0 - seg_start + 1.0
    ties = (last - first + 1).astype(float)
    r1 = np.bincount(g, weights=np.where(x, avg_rank, 0.0), minlength=k)
    tie_sum = np.bincount(g, weights=ties ** 2 - 1.0, minlength=k)    # sum over tie groups of t^3 - t
    u1 = r1 - n1 * (n1 + 1) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        var = n1 * n2 / 12.0 * ((n + 1) - tie_sum / (n * (n - 1.0)))
    var = np.where((n1 > 0) & (n2 > 0) & np.isfinite(var), var, 0.0)
    return u1, n1 * n2 / 2.0, var, n1, n2


def mann_whitney(xs: "Sequence[Sequence[float]] | Samples",
                 ys: "Sequence[Sequence[float]] | Samples") -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Mann-Whitney U test of each pair (xs[i], ys[i]), all pairs at once.

    Returns (U of x, p) arrays. Normal approximation with tie and continuity
    correction; U is NaN and p = 1 when either side is empty; p = 1 when all values
    of a pair are equal."""
    u1, mean, var, n1, n2 = _mw_parts(xs, ys)
    if len(u1) == 0:
        return np.full(0, np.nan), np.ones(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = np.maximum(np.abs(u1 - mean) - 0.5, 0.0)
        z = np.where(var > 0, dev / np.sqrt(np.where(var > 0, var, 1.0)), 0.0)
    p = np.where((var > 0) & (n1 > 0) & (n2 > 0), np.minimum(_erfc(z / math.sqrt(2)), 1.0), 1.0)
    return np.where((n1 > 0) & (n2 > 0), u1, np.nan), p


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function, evaluated
    with the modified Lentz method (converges for x < (a + 1) / (a + b + 2))."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if df <= 0 or math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    return min(1.0, beta_regularized(df / 2.0, 0.5, df / (df + t * t)))


def t_quantile(p_two_sided: float, df: float) -> float:
    """The t with P(|T| >= t) = p_two_sided (bisection on t_two_sided)."""
    lo, hi = 0.0, 1.0
    while t_two_sided(hi, df) > p_two_sided:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_two_sided(mid, df) > p_two_sided else (lo, mid)
    return 0.5 * (lo + hi)


def blocked(diffs: Sequence[Sequence[float]], groups: Sequence[object]) -> list[tuple[float, float, int]]:
    """Paired comparisons in blocks (launches), many at once: the analysis of a
    randomized complete block design. Comparison i has one difference per block it
    shares with its partner (diffs[i]: logs of the ratios of the two sides' medians,
    launch by launch); its estimate is their mean, its standard error from the
    variance of the differences around their comparison's mean pooled over the
    comparisons of its group (the blocks x treatments interaction: how much a ratio
    moves from launch to launch on this machine). Returns (mean, standard error,
    pooled degrees of freedom) per comparison; the standard error is NaN for a
    comparison of fewer than two differences or a group without degrees of freedom."""
    ss: dict[object, float] = {}
    df: dict[object, int] = {}
    for d, g in zip(diffs, groups):
        if len(d) >= 2:
            x = np.asarray(d, dtype=float)
            ss[g] = ss.get(g, 0.0) + float(((x - x.mean()) ** 2).sum())
            df[g] = df.get(g, 0) + len(x) - 1
    out = []
    for d, g in zip(diffs, groups):
        mean = float(np.mean(d)) if len(d) else math.nan
        if len(d) < 2 or not df.get(g):
            out.append((mean, math.nan, df.get(g, 0)))
        else:
            out.append((mean, math.sqrt(ss[g] / df[g] / len(d)), df[g]))
    return out


def blocked_t(diffs: Sequence[Sequence[float]], groups: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """Student's t of each comparison of `blocked` (its mean over its standard error,
    on its group's pooled degrees of freedom) and its two-sided p. p = 1 where the
    standard error is NaN; t = +-inf, p = 0, where the differences do not vary at all
    but their mean is not 0."""
    t_out, p_out = np.zeros(len(diffs)), np.ones(len(diffs))
    for i, (mean, se, df) in enumerate(blocked(diffs, groups)):
        if math.isnan(se):
            continue
        if se == 0.0:
            t_out[i], p_out[i] = (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
            continue
        t_out[i] = mean / se
        p_out[i] = t_two_sided(t_out[i], df)
    return t_out, p_out


@lru_cache(maxsize=4096)
def _rank_sum_dist(weights: tuple[int, ...], n1: int) -> np.ndarray:
    """Number of ways each sum of n1 of the (integer) weights can occur."""
    top = sum(weights)
    c = np.zeros((n1 + 1, top + 1))
    c[0, 0] = 1.0
    for w in weights:
        # every subset either takes w or not (the right side is read before assignment)
        c[1:, w:] = c[1:, w:] + c[:-1, :top + 1 - w]
    return c[n1]


def exact_mann_whitney(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p of the Mann-Whitney U test, exact permutation distribution given
    the midranks (so also with ties); 1 where a side is empty or all values are equal."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n1, n = len(x), len(x) + len(y)
    if len(x) == 0 or len(y) == 0:
        return 1.0
    both = np.concatenate([x, y])
    order = np.argsort(both, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(1, n + 1)
    for v in np.unique(both):                       # ties: midranks
        tie = both == v
        ranks[tie] = ranks[tie].mean()
    doubled = tuple(int(round(2 * r)) for r in ranks)   # midranks x 2 are integers
    dist = _rank_sum_dist(tuple(sorted(doubled)), n1)
    total = dist.sum()
    expect = n1 * (n + 1)                           # E of the doubled rank sum
    obs = sum(doubled[:n1])
    dev = abs(obs - expect)
    if dev == 0:
        return 1.0
    s = np.arange(len(dist))
    return float(min(1.0, dist[np.abs(s - expect) >= dev].sum() / total))


def min_p(n1: int, n2: int) -> float:
    """The smallest two-sided p the exact test can give with n1 and n2 samples."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: reject where adjusted < alpha keeps the family-wise error <= alpha."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adj
    return out


# --------------------------------------------------------------- signed ranks
def signed_rank_p(values: Sequence[float]) -> float:
    """Exact two-sided p-value of Wilcoxon's signed-rank test that `values` are
    symmetric about 0, for paired measurements taken side by side (log ratios of two
    variants round by round, where slow drift cancels in each pair). Zeros are
    dropped; tied magnitudes get their mean rank. The null distribution of W (the sum
    of the positive values' ranks) is counted exactly over all 2^n sign patterns by
    subset sums of the doubled (integer) ranks; p = P(|W - E W| >= observed)."""
    x = [float(v) for v in values if v != 0.0]
    if any(not math.isfinite(v) for v in x):
        raise ValueError("signed_rank_p needs finite values")
    n = len(x)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(x[i]))
    ranks2 = [0] * n                      # twice the mean rank: an integer
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(x[order[j + 1]]) == abs(x[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2
        i = j + 1
    total = sum(ranks2)
    ways = [0] * (total + 1)              # ways[s]: sign patterns with doubled W = s
    ways[0] = 1
    for r in ranks2:
        for s in range(total, r - 1, -1):
            ways[s] += ways[s - r]
    w2 = sum(r for r, v in zip(ranks2, x) if v > 0)
    dev = abs(2 * w2 - total)             # |2W2 - total| = 4 |W - E W|
    extreme = sum(c for s, c in enumerate(ways) if abs(2 * s - total) >= dev)
    return min(1.0, extreme / 2 ** n)


# --------------------------------------------------------------- bootstrap
def _resampled_medians(sorted_flat: np.ndarray, lengths: np.ndarray, resamples: int,
                       rng: np.random.Generator) -> np.ndarray:
    """(k, resamples) medians of resamples of each sorted segment (all lengths >= 1)."""
    n = lengths[:, None].astype(float)
    m = (lengths[:, None] + 1) // 2
    u = rng.beta(m, lengths[:, None] - m + 1, size=(len(lengths), resamples))
    a = np.minimum((n * u).astype(np.int64), lengths[:, None] - 1)
    off = (np.cumsum(lengths) - lengths)[:, None]
    lo = sorted_flat[off + a]
    even = lengths % 2 == 0
    if not even.any():
        return lo
    # the next order statistic: the least of the n - m draws above U_(m)
    r = np.maximum(lengths[:, None] - m, 1)
    w = u + (1.0 - u) * -np.expm1(-rng.standard_exponential(u.shape) / r)
    b = np.where(even[:, None], np.minimum((n * w).astype(np.int64), lengths[:, None] - 1), a)
    return (lo + sorted_flat[off + b]) * 0.5


def bootstrap_medians(sorted_x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(k, resamples) medians of resampled rows of `sorted_x` (k, n), each row sorted:
    the same distribution as the median of n values drawn with replacement."""
    k, n = sorted_x.shape
    return _resampled_medians(sorted_x.ravel(), np.full(k, n, dtype=np.int64), resamples, rng)


def _row_quantiles(v: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """Row-wise quantiles, linear interpolation (numpy's default), via one partition."""
    n = v.shape[1]
    pos = [q * (n - 1) for q in qs]
    kth = sorted({int(math.floor(p)) for p in pos} | {min(int(math.floor(p)) + 1, n - 1) for p in pos})
    part = np.partition(v, kth, axis=1)
    out = []
    for p in pos:
        lo = int(math.floor(p))
        hi = min(lo + 1, n - 1)
        out.append(part[:, lo] + (part[:, hi] - part[:, lo]) * (p - lo))
    return out


def bootstrap_median_ratio(bases: "Sequence[Sequence[float]] | Samples", news: "Sequence[Sequence[float]] | Samples",
                           confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                           seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap interval (lo, hi) of median(new)/median(base) per pair;
    NaN where a side is empty. Deterministic for a given seed and input."""
    sb, sn = Samples.of(bases), Samples.of(news)
    k = len(sb)
    lo_out, hi_out = np.full(k, np.nan), np.full(k, np.nan)
    nb, nn = sb.lengths, sn.lengths
    fb, fn = _sort_segments(sb.flat, nb), _sort_segments(sn.flat, nn)
    ob, on = sb.start, sn.start
    rng = np.random.default_rng(seed)
    tail = (1 - confidence) / 2
    live = np.nonzero((nb > 0) & (nn > 0))[0]
    chunk = max(1, 1_000_000 // resamples)
    for s in range(0, len(live), chunk):
        part = live[s:s + chunk]
        # the chunk's segments, gathered into one flat array per side
        ib = np.concatenate([np.arange(o, o + c) for o, c in zip(ob[part], nb[part])])
        in_ = np.concatenate([np.arange(o, o + c) for o, c in zip(on[part], nn[part])])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (_resampled_medians(fn[in_], nn[part], resamples, rng)
                     / _resampled_medians(fb[ib], nb[part], resamples, rng))
        lo_out[part], hi_out[part] = _row_quantiles(ratio, (tail, 1 - tail))
    return lo_out, hi_out
