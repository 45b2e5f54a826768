"""Which algorithm, per collective, rank count and message-size range.

* Measured rank counts: at each measured size, the fastest candidate (an algorithm the
  target can express, measured ok and plausible) against the library's default, tested
  at the level they were measured (analysis/launches.py: inside shared launches, or on
  launch medians between launches), Holm-adjusted over the comparisons of every
  candidate with its default in the run (so that picking the fastest of many is not a
  lucky draw), alpha 0.01. Chosen only where significantly faster, else the default:
  a rule rests on launches that agree, never on one launch's state.
* Cutoffs: between two measured sizes with different choices, where the two curves
  cross (an algorithm's curve is its fitted model at that rank count; the default's,
  which has no schedule, the measured medians interpolated on log-log axes); the
  geometric midpoint only where the curves do not cross in between (said in the rule).
* Rank counts between the measured ones, not measured: decided from the models alone,
  an algorithm chosen only where it is predicted MODEL_MARGIN faster than the default.
  The default's time there: a library's default runs one of the library's own
  algorithms, picked by rank count and size (Open MPI 4.1's allgather, for one, runs
  recursive doubling at 4 and 8 ranks and Bruck at 3, 5, 6, 7). Where the default's
  measured median at a neighbouring rank count matches one candidate's (within
  IDENTITY_TOLERANCE, the closest), the default is predicted as that candidate's model
  at the unmeasured count, and a neighbour whose match cannot run there (a power-of-two
  algorithm at 7 ranks) says nothing about it. Where no candidate matches (MPICH's
  shared-memory device collectives), the measured defaults of the two neighbours are
  interpolated in log p.
Every rule says where it came from: "measured" or "model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from collkit.analysis import launches, stats
from collkit.tune.data import Measured
from collkit.tune.fit import ModelFit

DEFAULT = "default"
MODEL_MARGIN = 1.03      # predicted speed-up a model-only choice needs; leave-one-rank-count-out
                         # cross-validation on the H100 campaign: 1.10 -> median regret 1.050, 1.03 -> 1.034,
                         # the same worst case against the default (docs/experiments/tuning.md, section 7)
# The default "is" a candidate at a measured point when their medians agree this closely
# (the campaign's run-to-run spread of one algorithm's median is a few per cent).
IDENTITY_TOLERANCE = 1.10
# Types in a tuning file's byte ranges are unknown (any datatype may call): a
# requirement on the count is met for every type when bytes >= 16 x the count needed.
MAX_TYPE_BYTES = 16


@dataclass(frozen=True)
class Candidate:
    """An algorithm the target file can name."""
    name: str                        # canonical
    native: str
    native_id: str
    requires: tuple[str, ...] = ()
    # a variant's [parameters] setting, which the file writes in its own columns
    # (Open MPI's segment size and fanout); () for the algorithm as forced
    params: tuple[tuple[str, str], ...] = ()


@dataclass
class Rule:
    collective: str
    ranks: int
    bytes_lo: int                    # inclusive, in collkit-bench bytes (one block for allgather)
    bytes_hi: int | None             # inclusive; None: no upper bound
    choice: str                      # canonical name or "default"
    source: str                      # "measured" | "model"
    cutoff: str = ""                 # how bytes_lo was found: "", "models cross", "midpoint", "requirement"
    speedup: float | None = None     # expected default / chosen time
    p_value: float | None = None     # Holm-adjusted, measured choices
    at_bytes: list[int] = field(default_factory=list)   # measured sizes behind the rule


@dataclass(frozen=True)
class Decision:
    collective: str
    ranks: int
    bytes: int
    choice: str
    source: str
    speedup: float | None
    p_value: float | None


def _allowed(c: Candidate, p: int) -> bool:
    from collkit.backends.offer import met
    for r in c.requires:
        if r in ("count_ge_ranks", "count_ge_pow2", "in_place", "one_rank_per_node"):
            continue
        if not met(r, p, 1 << 30, False, p):
            return False
    return True


def min_bytes(c: Candidate, p: int) -> int:
    """The smallest byte count at which every datatype meets the candidate's count requirement."""
    need = 0
    if "count_ge_ranks" in c.requires:
        need = p
    if "count_ge_pow2" in c.requires:
        need = max(need, 1 << (p.bit_length() - 1))
    return need * MAX_TYPE_BYTES


def _interp_loglog(xs: list[float], ys: list[float]) -> Callable[[float], float]:
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))

    def f(x: float) -> float:
        return float(np.exp(np.interp(math.log(x), lx, ly)))
    return f


def _crossing(f: Callable[[float], float], g: Callable[[float], float], lo: float, hi: float) -> int | None:
    """The first size in (lo, hi) where f stops being below g (f chosen at lo, g at hi)."""
    xs = np.geomspace(lo, hi, 25)
    d = [math.log(f(x)) - math.log(g(x)) for x in xs]
    for i in range(1, len(xs)):
        if d[i - 1] <= 0 < d[i] or (d[i - 1] < 0 <= d[i]):
            a, b = xs[i - 1], xs[i]
            for _ in range(40):
                m = math.sqrt(a * b)
                if math.log(f(m)) - math.log(g(m)) <= 0:
                    a = m
                else:
                    b = m
            return max(int(math.ceil(b)), int(lo) + 1)
    return None


def _best_against_default(rows, tested: list[int], candidates, by) -> list[float]:
    """Holm-adjusted p of each tested row's best against its default, the family being
    every allowed, plausible candidate of those rows against its default."""
    pairs, owner = [], []
    for i in tested:
        coll, p, n, default, best = rows[i]
        names = {c.name for c in candidates.get(coll, []) if _allowed(c, p) and n >= min_bytes(c, p)}
        for m in by[(coll, p, n)].values():
            if m.algorithm in names and not m.implausible:
                pairs.append((m.timing, default.timing))
                owner.append((i, m is best))
    adjusted = launches.holm(launches.compare_points(pairs, groups=[i for i, _ in owner]))
    of_best = {i: float(q) for (i, is_best), q in zip(owner, adjusted) if is_best}
    return [of_best[i] for i in tested]


class Decider:
    def __init__(self, points: list[Measured], candidates: dict[str, list[Candidate]],
                 models: dict[tuple[str, str], ModelFit], no_default: frozenset[str] = frozenset()):
        """points: one library's (or libcollkit's plus the library default's) measurements;
        candidates: per collective, what the file may choose; models: (collective, name) -> fit;
        no_default: collectives whose file cannot fall back to the measured default (an
        MPICH collective taken from the device, tune/mpich_device.py): the fastest
        candidate everywhere, without a test against the default."""
        self.candidates = candidates
        self.models = models
        self.no_default = no_default
        self.calibration: dict[tuple[str, int, str], Callable[[float], float]] = {}
        self.by: dict[tuple[str, int, int], dict[str, Measured]] = {}
        for m in points:
            self.by.setdefault((m.collective, m.ranks, m.bytes), {})[m.algorithm] = m

    # ------------------------------------------------------------ measured
    def measured(self) -> list[Decision]:
        rows = []
        for (coll, p, n), algs in sorted(self.by.items()):
            default = algs.get(DEFAULT)
            if default is None:
                continue
            names = {c.name: c for c in self.candidates.get(coll, []) if _allowed(c, p) and n >= min_bytes(c, p)}
            cands = [m for a, m in algs.items() if a in names and not m.implausible]
            best = min(cands, key=lambda m: m.median_us) if cands else None
            rows.append((coll, p, n, default, best))
        tested = [i for i, r in enumerate(rows) if r[4] is not None and r[4].median_us < r[3].median_us
                  and r[0] not in self.no_default]
        adj = dict(zip(tested, _best_against_default(rows, tested, self.candidates, self.by)))
        out = []
        for i, (coll, p, n, default, best) in enumerate(rows):
            pv = adj.get(i)
            if coll in self.no_default and best is not None:
                out.append(Decision(coll, p, n, best.algorithm, "measured", default.median_us / best.median_us, None))
            elif pv is not None and pv < stats.ALPHA:
                out.append(Decision(coll, p, n, best.algorithm, "measured", default.median_us / best.median_us,
                                    float(pv)))
            else:
                out.append(Decision(coll, p, n, DEFAULT, "measured", 1.0, float(pv) if pv is not None else None))
        return out

    # ------------------------------------------------------------ curves
    def _default_curve(self, coll: str, p: int) -> Callable[[float], float] | None:
        pts = sorted((n, algs[DEFAULT].median_us) for (c, q, n), algs in self.by.items()
                     if c == coll and q == p and DEFAULT in algs)
        if not pts:
            return None
        return _interp_loglog([x for x, _ in pts], [y for _, y in pts])

    def _measured_curve(self, coll: str, p: int, alg: str) -> Callable[[float], float] | None:
        pts = sorted((n, algs[alg].median_us) for (c, q, n), algs in self.by.items()
                     if c == coll and q == p and alg in algs)
        return _interp_loglog([x for x, _ in pts], [y for _, y in pts]) if len(pts) >= 2 else None

    def curve(self, coll: str, p: int, alg: str, default_curve=None) -> Callable[[float], float] | None:
        if alg == DEFAULT:
            return default_curve or self._default_curve(coll, p)
        model = self.models.get((coll, alg))
        if model is None:
            return self._measured_curve(coll, p, alg)
        if (coll, p, alg) in self.calibration:
            return self.calibration[(coll, p, alg)]
        return lambda n, m=model: max(m.predict(p, n), 1e-9)

    def _calibrated(self, coll: str, p: int, alg: str, lower: int, upper: int, w: float):
        """The model at an unmeasured p, times its measured/predicted ratio at the
        neighbouring measured rank counts (interpolated in log p): the model gives the
        shape in p, the measurements its level on this machine."""
        model = self.models[(coll, alg)]
        sides = []
        for q, weight in ((lower, 1 - w), (upper, w)):
            meas = self._measured_curve(coll, q, alg)
            if meas is not None:
                sides.append((q, weight, meas))
        if not sides:
            return lambda n: max(model.predict(p, n), 1e-9)
        total = sum(weight for _, weight, _ in sides) or 1.0

        def f(n: float) -> float:
            log_r = sum(weight * math.log(meas(n) / max(model.predict(q, n), 1e-9)) for q, weight, meas in sides)
            return max(model.predict(p, n), 1e-9) * math.exp(log_r / total)
        return f

    # ------------------------------------------------------------ rules
    def rules_for(self, coll: str, p: int, decisions: list[Decision], default_curve=None) -> list[Rule]:
        """Size ranges from one rank count's decisions (sorted by size)."""
        rules: list[Rule] = []
        for d in decisions:
            if rules and rules[-1].choice == d.choice:
                r = rules[-1]
                r.at_bytes.append(d.bytes)
                if d.speedup and r.speedup:
                    r.speedup = min(r.speedup, d.speedup)   # the conservative expectation of the range
                if d.p_value is not None:
                    r.p_value = max(r.p_value or 0.0, d.p_value)
                continue
            lo, cutoff = 0, ""
            if rules:
                prev = rules[-1]
                a_curve = self.curve(coll, p, prev.choice, default_curve)
                b_curve = self.curve(coll, p, d.choice, default_curve)
                left = prev.at_bytes[-1]
                cross = _crossing(a_curve, b_curve, left, d.bytes) if a_curve and b_curve else None
                if cross is not None:
                    lo, cutoff = cross, "models cross"
                else:
                    lo, cutoff = int(round(math.sqrt(left * d.bytes))), "midpoint"
                prev.bytes_hi = lo - 1
            rules.append(Rule(coll, p, lo, None, d.choice, d.source, cutoff, d.speedup, d.p_value, [d.bytes]))
        return self._enforce_requirements(coll, p, rules)

    def _enforce_requirements(self, coll: str, p: int, rules: list[Rule]) -> list[Rule]:
        names = {c.name: c for c in self.candidates.get(coll, [])}
        out: list[Rule] = []
        for r in rules:
            need = min_bytes(names[r.choice], p) if r.choice in names else 0
            if need > r.bytes_lo and (r.bytes_hi is None or need <= r.bytes_hi):
                out.append(Rule(coll, p, r.bytes_lo, need - 1, DEFAULT, r.source, r.cutoff, 1.0, None, []))
                r.bytes_lo, r.cutoff = need, "requirement"
            elif r.bytes_hi is not None and need > r.bytes_hi:
                r.choice, r.speedup, r.cutoff = DEFAULT, 1.0, r.cutoff
            out.append(r)
        merged: list[Rule] = []
        for r in out:
            if merged and merged[-1].choice == r.choice:
                merged[-1].bytes_hi = r.bytes_hi
                merged[-1].at_bytes += r.at_bytes
            else:
                merged.append(r)
        return merged

    # ------------------------------------------------------------ model-only rank counts
    def identity(self, coll: str, q: int, n: int) -> str | None:
        """The candidate whose measured median at (coll, q, n) is closest to the
        default's, if within IDENTITY_TOLERANCE: the algorithm the default ran there."""
        algs = self.by.get((coll, q, n)) or {}
        dflt = algs.get(DEFAULT)
        if dflt is None or dflt.median_us <= 0:
            return None
        names = {c.name for c in self.candidates.get(coll, [])}
        gaps = [(abs(math.log(m.median_us / dflt.median_us)), a) for a, m in algs.items()
                if a in names and not m.implausible and m.median_us > 0]
        if not gaps:
            return None
        gap, alg = min(gaps)
        return alg if gap <= math.log(IDENTITY_TOLERANCE) else None

    def _default_at(self, coll: str, p: int, q: int) -> Callable[[float], float | None]:
        """What the default measured at rank count q says about it at p, per size: the
        model at p of the candidate it matched at q's nearest measured size; q's own
        measured default where it matched none; None where its match cannot run at p."""
        measured = self._default_curve(coll, q)
        sizes = sorted(n for (c, r, n), algs in self.by.items() if c == coll and r == q and DEFAULT in algs)
        names = {c.name: c for c in self.candidates.get(coll, [])}
        ids = {n: self.identity(coll, q, n) for n in sizes}

        def f(n: float) -> float | None:
            near = min(sizes, key=lambda s: abs(math.log(s / n)))
            alg = ids[near]
            if alg is None or (coll, alg) not in self.models:
                return measured(n)
            if not _allowed(names[alg], p) or n < min_bytes(names[alg], p):
                return None
            return self.calibration[(coll, p, alg)](n)
        return f

    def modelled(self, coll: str, p: int, measured_ranks: list[int], sizes: list[int]) -> tuple[list[Decision], object]:
        lower = max(q for q in measured_ranks if q < p)
        upper = min(q for q in measured_ranks if q > p)
        lo_c, hi_c = self._default_curve(coll, lower), self._default_curve(coll, upper)
        if lo_c is None or hi_c is None:
            return [], None
        w = (math.log(p) - math.log(lower)) / (math.log(upper) - math.log(lower))
        lo_d, hi_d = self._default_at(coll, p, lower), self._default_at(coll, p, upper)

        def default_curve(n: float) -> float:
            sides = [(1 - w, lo_d(n)), (w, hi_d(n))]
            sides = [(weight, t) for weight, t in sides if t is not None and t > 0]
            if not sides:    # neither neighbour's algorithm runs at p: their measured defaults
                sides = [(1 - w, lo_c(n)), (w, hi_c(n))]
            total = sum(weight for weight, _ in sides) or 1.0
            return math.exp(sum(weight * math.log(t) for weight, t in sides) / total)

        for c in self.candidates.get(coll, []):
            if (coll, c.name) in self.models:
                self.calibration[(coll, p, c.name)] = self._calibrated(coll, p, c.name, lower, upper, w)
        out = []
        for n in sizes:
            dflt = default_curve(n)
            best, best_t = None, math.inf
            for c in self.candidates.get(coll, []):
                if (coll, c.name) not in self.models or not _allowed(c, p) or n < min_bytes(c, p):
                    continue
                t = self.calibration[(coll, p, c.name)](n)
                if 0 < t < best_t:
                    best, best_t = c.name, t
            if best is not None and (dflt / best_t >= MODEL_MARGIN or coll in self.no_default):
                out.append(Decision(coll, p, n, best, "model", dflt / best_t, None))
            else:
                out.append(Decision(coll, p, n, DEFAULT, "model", 1.0, None))
        return out, default_curve

    def all_rules(self) -> list[Rule]:
        measured = self.measured()
        rules: list[Rule] = []
        for coll in sorted({d.collective for d in measured}):
            mine = [d for d in measured if d.collective == coll]
            ranks = sorted({d.ranks for d in mine})
            sizes = sorted({d.bytes for d in mine})
            for p in range(ranks[0], ranks[-1] + 1):
                if p in ranks:
                    rules += self.rules_for(coll, p, [d for d in mine if d.ranks == p])
                else:
                    ds, dcurve = self.modelled(coll, p, ranks, sizes)
                    if ds:
                        rules += self.rules_for(coll, p, ds, dcurve)
        return rules
