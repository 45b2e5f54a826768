"""Fitting alpha, beta, gamma of T(p, n) = alpha a(p) + beta b(p) n + gamma c(p) n
(terms: tune/costs.py) to measured medians, one model per (platform, library,
backend, collective, algorithm) across all its rank counts, so that it predicts
rank counts not measured.

* Weighted: each median counts by its standard error (data.Measured.sigma_us, from
  its confidence interval), so residuals are in units of the measurement's own noise
  and a 5 us point does not weigh less than a 5 ms point just for being small.
* Robust: iteratively reweighted least squares with Huber's weights (k = 1.345 on
  log residuals in units of each point's relative error): an outlier's pull grows
  only linearly, not quadratically, and a model too slow costs as much as one too fast.
* Non-negative: times cannot shrink with more steps or bytes; each solve is the best
  least-squares fit over the subsets of non-negative coefficients (three unknowns:
  at most seven small solves).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from collkit.tune import costs
from collkit.tune.data import Measured

MIN_POINTS = 3          # at least one more than the unknowns of a data-movement model
MIN_SIZES = 2           # and two sizes: one size cannot separate latency from bandwidth
HUBER_K = 1.345
ITERATIONS = 20


@dataclass(frozen=True)
class ModelFit:
    platform: str
    mpi: str
    backend: str
    collective: str
    algorithm: str
    alpha_us: float             # per message
    beta_us_per_byte: float     # per byte sent
    gamma_us_per_byte: float    # per byte reduced
    points: int
    ranks: tuple[int, ...]
    median_error: float         # median |predicted - measured| / measured over the fitted points
    max_error: float
    errors_by_ranks: dict[int, float]   # median relative error per rank count

    def predict(self, p: int, n: float) -> float:
        t = costs.terms(self.collective, self.algorithm, p)
        return self.alpha_us * t.a + (self.beta_us_per_byte * t.b + self.gamma_us_per_byte * t.c) * n


def _design(collective: str, algorithm: str, ps: np.ndarray, ns: np.ndarray) -> np.ndarray:
    table = {p: costs.terms(collective, algorithm, int(p)) for p in np.unique(ps)}
    a = np.array([table[p].a for p in ps])
    b = np.array([table[p].b for p in ps]) * ns
    c = np.array([table[p].c for p in ps]) * ns
    return np.column_stack([a, b, c])


def nnls_small(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """min ||x c - y|| over c >= 0 for a few columns: every subset of columns, the
    feasible least-squares solution with the lowest residual."""
    k = x.shape[1]
    live = [j for j in range(k) if np.any(x[:, j] != 0)]
    best, best_res = np.zeros(k), float(np.sum(y * y))
    for size in range(1, len(live) + 1):
        for cols in itertools.combinations(live, size):
            sol, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            if np.any(sol < 0):
                continue
            res = float(np.sum((x[:, cols] @ sol - y) ** 2))
            if res < best_res:
                best_res = res
                best = np.zeros(k)
                best[list(cols)] = sol
    return best


def robust_fit(x: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Huber IRLS of y ~ x c, c >= 0, with y's standard errors `sigma`, on log times.

    Times spread over decades and their noise is multiplicative, so the residual is
    log(predicted / measured) in units of the point's relative error sigma / y: a model
    10x too slow costs what one 10x too fast does (in linear units under-prediction
    could never cost more than 100 %). Each step is a Gauss-Newton step of that
    problem, log(x c) ~ log m0 - 1 + x c / m0 around the current prediction m0, solved
    with non-negative coefficients; it starts from the linear fit weighted by sigma."""
    coef = nnls_small(x / sigma[:, None], y / sigma)
    rel = sigma / y
    ly = np.log(y)
    w = np.ones(len(y))
    for _ in range(ITERATIONS):
        m0 = np.maximum(x @ coef, 1e-12 * max(float(y.max()), 1e-300))
        s = np.sqrt(w) / rel
        new = nnls_small(x / m0[:, None] * s[:, None], (ly - np.log(m0) + 1.0) * s)
        r = (ly - np.log(np.maximum(x @ new, 1e-300))) / rel
        u = np.abs(r) / HUBER_K
        w = np.where(u <= 1.0, 1.0, 1.0 / np.maximum(u, 1e-12))
        if np.allclose(new, coef, rtol=1e-7, atol=0.0):
            coef = new
            break
        coef = new
    return coef


def fit_one(points: list[Measured]) -> ModelFit | None:
    """The model of one algorithm's points (all one platform, library, backend,
    collective, algorithm), or None without terms or with too few points."""
    first = points[0]
    if costs.entry(first.collective, first.algorithm) is None:
        return None
    pts = [m for m in points if not m.implausible] or points
    if len(pts) < MIN_POINTS or len({m.bytes for m in pts}) < MIN_SIZES:
        return None
    ps = np.array([m.ranks for m in pts])
    ns = np.array([m.bytes for m in pts], dtype=float)
    y = np.array([m.median_us for m in pts])
    sigma = np.array([m.sigma_us for m in pts])
    x = _design(first.collective, first.algorithm, ps, ns)
    alpha, beta, gamma = robust_fit(x, y, sigma)
    rel = np.abs(x @ np.array([alpha, beta, gamma]) - y) / y
    by_ranks = {int(p): float(np.median(rel[ps == p])) for p in np.unique(ps)}
    return ModelFit(first.platform, first.mpi, first.backend, first.collective, first.algorithm,
                    float(alpha), float(beta), float(gamma), len(pts), tuple(sorted(by_ranks)),
                    float(np.median(rel)), float(np.max(rel)), by_ranks)


def group(points) -> dict[tuple, list[Measured]]:
    out: dict[tuple, list[Measured]] = {}
    for m in points:
        out.setdefault((m.platform, m.mpi, m.backend, m.collective, m.algorithm), []).append(m)
    return out


def fit_all(points) -> tuple[dict[tuple, ModelFit], list[tuple]]:
    """(models by key, keys with terms but too few points to fit)."""
    models, too_few = {}, []
    for key, pts in group(points).items():
        if key[4] == "default" or key[4].startswith("tuned:"):
            continue
        f = fit_one(pts)
        if f is not None:
            models[key] = f
        elif costs.entry(key[3], key[4]) is not None:
            too_few.append(key)
    return models, too_few
