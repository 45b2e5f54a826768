"""`collkit compare BASE NEW [NEW...]`: what changed between campaigns, with significance.

Points are matched by identity (IDENTITY below) or by the keys the user chooses
(`--match-keys`, or `--ignore-keys` to drop some from the identity: `--ignore-keys mpi`
compares two libraries). Per matched point with `ok` timings on both sides:

* ratio = estimate(NEW) / estimate(BASE), each the median of the point's launch medians
  (campaign/repeats.py), with a 95 % percentile-bootstrap interval over launches (each
  side's launch medians resampled; fixed seed, so the output is deterministic);
* the test at the level the campaigns vary (analysis/launches.py): two campaigns never
  share a launch, so the exact Mann-Whitney test on the launch medians (simulated
  campaigns, deterministic: on the iterations, as their one launch is every launch);
* a verdict, faster / slower / same, at alpha = 0.01 after Holm's correction over every
  comparison of the invocation (all NEW campaigns together): the chance that any point
  is called faster or slower by noise alone stays below 1 %, which is what a regression
  gate (`--fail-on-regression`) needs. The direction is that of the ratio. Where the
  launches are too few for the test to reach 0.01 at all (3 + 3 launches: no p below
  0.1) the verdict is `unknown`, with the launches needed; a whole run whose family is
  too large for its launches says so under the table.

Points on one side only, or not `ok` on a side (invalid, failed, skipped), are listed
with a status, never dropped. A geometric mean of the ratios per NEW campaign,
collective and backend summarises the rest."""

from __future__ import annotations

import csv
import io
import json
import math
import operator
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from collkit.analysis import launches, stats
from collkit.campaign.points import label, parse_parameters
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError, did_you_mean
from collkit.common.table import render

IDENTITY = ("collective", "backend", "mpi", "algorithm", "ranks", "count", "bytes", "dtype", "op", "root",
            "in_place", "parameters")
MAX_PCT = 10000.0


@dataclass(frozen=True)
class Row:
    """One point of the comparison. status: compared | only_base | only_new | not_ok."""
    new: str
    collective: str
    backend: str
    mpi: str
    algorithm: str
    ranks: int
    count: int
    bytes: int
    dtype: str
    op: str
    root: int
    in_place: bool
    status: str
    base_status: str
    new_status: str
    base_median_us: float | None = None
    new_median_us: float | None = None
    ratio: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    verdict: str = ""         # faster | slower | same | unknown (the launches cannot reach significance)
    note: str = ""
    parameters: str = ""      # the [parameters.NAME] setting (points.format_parameters), "" for none
    test: str = ""            # the level it was tested at: "3 + 3 launches", "simulated" (analysis/launches.py)
    launches: str = ""        # launches of BASE + NEW

    @property
    def label(self) -> str:
        return label(self.backend, self.mpi, self.algorithm, parse_parameters(self.parameters))


@dataclass(frozen=True)
class Geomean:
    new: str
    collective: str
    backend: str
    points: int
    faster: int
    slower: int
    same: int
    geomean_ratio: float


@dataclass(frozen=True)
class Comparison:
    base: str
    news: tuple[str, ...]
    keys: tuple[str, ...]
    rows: list[Row]
    geomeans: list[Geomean]


# ------------------------------------------------------------------ options
def parse_keys(match: str | None, ignore: str | None) -> tuple[str, ...]:
    """The matching keys from --match-keys or --ignore-keys (IDENTITY when neither)."""
    if match is not None and ignore is not None:
        raise UserError("give --match-keys or --ignore-keys, not both")

    def names(text: str, opt: str) -> list[str]:
        out = [k.strip() for k in text.split(",") if k.strip()]
        for k in out:
            if k not in IDENTITY:
                raise UserError(f"{opt}: unknown key '{k}'{did_you_mean(k, IDENTITY)}; keys: {','.join(IDENTITY)}")
        return out

    if match is not None:
        keys = names(match, "--match-keys")
        if not keys:
            raise UserError("--match-keys needs at least one key")
        return tuple(k for k in IDENTITY if k in keys)
    if ignore is not None:
        dropped = names(ignore, "--ignore-keys")
        keys = tuple(k for k in IDENTITY if k not in dropped)
        if not keys:
            raise UserError("--ignore-keys leaves no key to match points on")
        return keys
    return IDENTITY


def percent(text: str) -> float:
    """--fail-on-regression PCT: finite, > 0, < 10000."""
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fail-on-regression needs a percentage, not '{text}'") from None
    if not math.isfinite(value) or value <= 0 or value >= MAX_PCT:
        raise argparse.ArgumentTypeError(f"--fail-on-regression must be above 0 and below {MAX_PCT:g} %, "
                                         f"not '{text}'")
    return value


# ------------------------------------------------------------------ matching
def _index(records: list[Record], keys: tuple[str, ...], name: str) -> dict[tuple, Record]:
    out: dict[tuple, Record] = {}
    key = operator.attrgetter(*keys)
    for r in records:
        k = key(r) if len(keys) > 1 else (key(r),)
        if k in out:
            raise UserError(f"{name}: two points share the key {','.join(map(str, k))} "
                            f"({out[k].label} and {r.label}); match on more keys than {','.join(keys)}")
        out[k] = r
    return out


def _times(r: Record) -> list[float]:
    """The iterations of a point of one launch (a point of several keeps them per launch)."""
    return r.launch_times[0] if len(r.launch_times) == 1 else []


_IDENT = operator.attrgetter(*IDENTITY)


def _ident(r: Record) -> dict:
    return dict(zip(IDENTITY, _IDENT(r)))


def _load(path: Path) -> list[Record]:
    if not path.is_dir():
        raise UserError(f"{path} is not a campaign directory")
    return Campaign.open(path).records()


def compare(base: Path, news: list[Path], keys: tuple[str, ...] = IDENTITY,
            resamples: int = stats.RESAMPLES) -> Comparison:
    base_idx = _index(_load(base), keys, str(base))
    pending: list[tuple[dict, Record, Record, str]] = []     # compared pairs, filled in below
    listed: list[Row] = []
    for new in news:
        new_idx = _index(_load(new), keys, str(new))
        shared = base_idx.keys() & new_idx.keys()
        if not shared:
            raise UserError(f"{base} and {new} share no points (matched on {','.join(keys)}); "
                            f"choose the keys with --match-keys or --ignore-keys")
        for k in sorted(base_idx.keys() | new_idx.keys()):
            b, n = base_idx.get(k), new_idx.get(k)
            rec = b or n
            ident = dict(new=str(new), **_ident(rec))
            if b is None or n is None:
                listed.append(Row(**ident, status="only_new" if b is None else "only_base",
                                  base_status=b.status if b else "", new_status=n.status if n else "",
                                  note=f"not in {'BASE' if b is None else 'NEW'}"))
            elif b.status != "ok" or n.status != "ok":
                bad = b if b.status != "ok" else n
                side = "BASE" if bad is b else "NEW"
                listed.append(Row(**ident, status="not_ok", base_status=b.status, new_status=n.status,
                                  note=f"{side} {bad.status}{': ' + bad.reason if bad.reason else ''}"))
            elif b.unstable or n.unstable:
                # times from before a steady state: no verdict until a re-measure is steady
                bad = b if b.unstable else n
                listed.append(Row(**ident, status="not_ok", base_status=b.status, new_status=n.status,
                                  note=f"{'BASE' if bad is b else 'NEW'} unstable: {bad.unstable}"))
            elif (len(b.launch_medians) < 2 and not _times(b)) or (len(n.launch_medians) < 2 and not _times(n)):
                listed.append(Row(**ident, status="not_ok", base_status=b.status, new_status=n.status,
                                  note="one launch without per-iteration times (times_us)"))
            elif not (b.time_median_us or 0) > 0:
                listed.append(Row(**ident, status="not_ok", base_status=b.status, new_status=n.status,
                                  note="BASE median is 0: no ratio"))
            else:
                pending.append((ident, b, n, str(new)))
    timings = [(launches.Timing.of(b, str(base)), launches.Timing.of(n, new)) for _, b, n, new in pending]
    tests = launches.compare_points(timings)
    padj = launches.holm(tests)
    # iterations' ratio interval where each side is one launch (simulated, or a campaign
    # of one launch): the launches' own interval is what needs two on a side
    single = [i for i, (tb, tn) in enumerate(timings) if tb.n < 2 or tn.n < 2]
    lo, hi = stats.bootstrap_median_ratio([_times(pending[i][1]) for i in single],
                                          [_times(pending[i][2]) for i in single], resamples=resamples)
    by_iter = {i: (float(a), float(z)) for i, a, z in zip(single, lo, hi)}
    rows = []
    for i, (ident, b, n, _) in enumerate(pending):
        # the estimates: the median of each point's launch medians (campaign/repeats.py)
        mb, mn = b.time_median_us, n.time_median_us
        ratio = mn / mb
        test = tests[i]
        ci = by_iter.get(i) if i in by_iter else launches.ratio_interval(*timings[i])
        sig = padj[i] < stats.ALPHA
        if test.too_few():
            verdict = "unknown"
        else:
            verdict = "slower" if sig and ratio > 1 else "faster" if sig and ratio < 1 else "same"
        note = (f"{test.describe()}: the launch test cannot reach p < {stats.ALPHA:g} "
                f"({launches.needed_launches()} launches a side at least)") if verdict == "unknown" else ""
        rows.append(Row(**ident, status="compared", base_status="ok", new_status="ok", base_median_us=mb,
                        new_median_us=mn, ratio=ratio, ratio_ci_low=ci[0] if ci else None,
                        ratio_ci_high=ci[1] if ci else None,
                        p_value=float(test.p), p_holm=float(padj[i]), verdict=verdict, note=note,
                        test=test.describe(), launches=f"{test.launches[0]}+{test.launches[1]}"))
    return Comparison(str(base), tuple(map(str, news)), keys, rows + listed, geomeans(rows))


def geomeans(rows: list[Row]) -> list[Geomean]:
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        if r.status == "compared" and r.ratio and math.isfinite(r.ratio):
            groups.setdefault((r.new, r.collective, r.backend), []).append(r)
    return [Geomean(new, coll, backend, len(g), sum(r.verdict == "faster" for r in g),
                    sum(r.verdict == "slower" for r in g), sum(r.verdict == "same" for r in g),
                    float(np.exp(np.mean(np.log([r.ratio for r in g])))))
            for (new, coll, backend), g in sorted(groups.items())]


def regressions(c: Comparison, pct: float) -> list[Row]:
    """Significant slowdowns of more than pct % (ratio of medians)."""
    return [r for r in c.rows if r.verdict == "slower" and r.ratio is not None and (r.ratio - 1) * 100 > pct]


# ------------------------------------------------------------------ output
def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}" if v < 100 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def to_table(c: Comparison) -> str:
    many = len(c.news) > 1
    pre = ["new"] if many else []
    # rows name their NEW campaign by its directory name where those are distinct
    names = {n: Path(n).name or n for n in c.news}
    if len(set(names.values())) < len(names):
        names = {n: n for n in c.news}
    compared = [r for r in c.rows if r.status == "compared"]
    others = [r for r in c.rows if r.status != "compared"]
    out = [f"BASE {c.base}; NEW {', '.join(c.news)}; matched on {','.join(c.keys)}", ""]
    if compared:
        body = [([names[r.new]] if many else []) +
                [r.collective, r.label, str(r.ranks), format_size(r.bytes), _us(r.base_median_us),
                 _us(r.new_median_us), f"{r.ratio:.3f}", _ci(r), r.launches, f"{r.p_holm:.2g}", r.verdict]
                for r in compared]
        k = len(pre)
        out.append(render(pre + ["collective", "algorithm", "ranks", "size", "base_us", "new_us", "new/base",
                                 "95% CI", "launches", "p_holm", "verdict"], body,
                          right={k + 2, k + 3, k + 4, k + 5, k + 6, k + 8}))
    if others:
        out += ["", "Points not compared:"]
        body = [([names[r.new]] if many else []) + [r.collective, r.label, str(r.ranks), format_size(r.bytes), r.status,
                                              r.note[:90]] for r in others]
        out.append(render(pre + ["collective", "algorithm", "ranks", "size", "status", "why"], body))
    if c.geomeans:
        out += ["", "Geometric mean of new/base:"]
        body = [([names[g.new]] if many else []) +
                [g.collective, g.backend, str(g.points), str(g.faster), str(g.slower), str(g.same),
                 f"{g.geomean_ratio:.3f}"] for g in c.geomeans]
        k = len(pre)
        out.append(render(pre + ["collective", "backend", "points", "faster", "slower", "same", "geomean"], body,
                          right={k + 2, k + 3, k + 4, k + 5, k + 6}))
    n = {v: sum(r.verdict == v for r in compared) for v in ("faster", "slower", "same", "unknown")}
    out += ["", f"{len(compared)} points compared: {n['faster']} faster, {n['slower']} slower, {n['same']} same"
                + (f", {n['unknown']} unknown" if n["unknown"] else "")
                + f" (Mann-Whitney U on launch medians, Holm-adjusted p < {stats.ALPHA:g}); "
                  f"{len(others)} not compared"]
    if n["unknown"]:
        out.append(f"unknown: too few launches for the test to reach p < {stats.ALPHA:g} "
                   f"({launches.needed_launches()} a side at least; [measure] launches)")
    between = [r for r in compared if r.test.endswith("launches")]
    if between and launches.launches_for(len(compared)) > min(_fewest(r) for r in between):
        out.append(f"with Holm over {len(compared)} comparisons, a point can be called faster or slower only from "
                   f"{launches.launches_for(len(compared))} launches a side ([measure] launches)")
    return "\n".join(out) + "\n"


def _ci(r: Row) -> str:
    if r.ratio_ci_low is None or r.ratio_ci_high is None:
        return "-"
    return f"[{r.ratio_ci_low:.3f}, {r.ratio_ci_high:.3f}]"


def _fewest(r: Row) -> int:
    """The fewer launches of the two sides ("3+5" -> 3)."""
    try:
        return min(int(x) for x in r.launches.split("+"))
    except ValueError:
        return 0


COLUMNS = tuple(f.name for f in fields(Row))


def to_csv(c: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in c.rows:
        cells = (getattr(r, k) for k in COLUMNS)
        w.writerow(["" if v is None else int(v) if isinstance(v, bool) else v for v in cells])
    return buf.getvalue()


def _finite(d: dict) -> dict:
    """JSON has no NaN or Infinity: such values become null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in d.items()}


def to_json(c: Comparison) -> str:
    return json.dumps({"base": c.base, "new": list(c.news), "keys": list(c.keys), "alpha": stats.ALPHA,
                       "correction": "holm",
                       "test": "exact mann-whitney-u on launch medians (simulated: on the iterations, normal "
                               "approximation with ties)",
                       "ratio_ci": f"percentile bootstrap over launches, {launches.RESAMPLES} resamples, seed "
                                   f"{stats.SEED} (one launch a side: over iterations, {stats.RESAMPLES})",
                       "points": [_finite(asdict(r)) for r in c.rows],
                       "geomeans": [_finite(asdict(g)) for g in c.geomeans]},
                      indent=1) + "\n"


def run(base: Path, news: list[Path], fmt: str = "table", match_keys: str | None = None,
        ignore_keys: str | None = None, fail_on_regression: float | None = None) -> int:
    c = compare(base, news, parse_keys(match_keys, ignore_keys))
    sys.stdout.write({"table": to_table, "csv": to_csv, "json": to_json}[fmt](c))
    if fail_on_regression is not None:
        bad = regressions(c, fail_on_regression)
        if bad:
            worst = max(bad, key=lambda r: r.ratio or 0)
            print(f"collkit: {len(bad)} point{'s' if len(bad) != 1 else ''} significantly slower by more than "
                  f"{fail_on_regression:g} % (worst: {worst.label} {worst.collective} p={worst.ranks} "
                  f"{format_size(worst.bytes)}, {worst.ratio:.2f}x)", file=sys.stderr)
            return 1
    return 0
