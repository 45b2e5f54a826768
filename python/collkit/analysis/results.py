"""Campaign records (campaign/record.py) as rows: `collkit export`, results.csv, and the summary table."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from collkit.analysis import launches, stats
from collkit.campaign.record import Record
from collkit.campaign.sizes import format_size
from collkit.common.table import render, render_sections, terminal_width

COLUMNS = ("collective", "backend", "mpi", "algorithm", "ranks", "count", "bytes", "dtype", "op", "root",
           "in_place", "status", "reason", "iterations", "time_min_us", "time_median_us", "time_max_us",
           "time_p5_us", "time_p95_us", "algbw_GBps", "busbw_GBps", "sync", "native", "id")
# Instrumented campaigns (collkit-bench-instr) add the time breakdown of each point.
BREAKDOWN_COLUMNS = ("comm_us", "reduce_us", "copy_us", "other_us")
# Always last: the median's 95 % distribution-free interval (analysis/stats.py), computed
# from `times_us`; empty for untimed points and below 6 iterations.
CI_COLUMNS = ("time_median_ci_low_us", "time_median_ci_high_us")
# After them: why a point's median is not believable (below the one-message floor
# collkit-bench measured in its launch), and why its times may hold start-up costs
# (docs/bench-protocol.md, "Steady state"); each empty when there is nothing to say.
FLAG_COLUMNS = ("implausible", "unstable")
# Last, only in campaigns with [parameters.NAME]: the setting a point ran with (NAME=VALUE;...).
PARAMETER_COLUMNS = ("parameters",)


# A row of the export is a Record (campaign/record.py): its typed attributes, in COLUMNS order.


def read_csv(path: Path) -> list[Record]:
    """A results.csv (to_csv's output) read back as records of its columns."""
    with open(path, newline="") as f:
        return [Record.from_csv_row(r) for r in csv.DictReader(f)]


def sort_rows(rows: list[Record]) -> list[Record]:
    return sorted(rows, key=lambda r: (r.collective, r.mpi, r.ranks, r.bytes, r.backend, r.algorithm, r.parameters))


def columns(rows: list[Record]) -> tuple[str, ...]:
    """COLUMNS, the breakdown columns when some point carries a breakdown, then
    CI_COLUMNS and FLAG_COLUMNS, and PARAMETER_COLUMNS when some point has a setting."""
    base = COLUMNS + BREAKDOWN_COLUMNS if any(r.comm_us is not None for r in rows) else COLUMNS
    tail = PARAMETER_COLUMNS if any(r.parameters for r in rows) else ()
    return base + CI_COLUMNS + FLAG_COLUMNS + tail


def values(r: Record, cols: tuple[str, ...]) -> list:
    """One export row: the record's typed attributes, and its median interval."""
    ci = stats.record_median_ci(r) if CI_COLUMNS[0] in cols else None
    extra = dict(zip(CI_COLUMNS, ci if ci is not None else (None, None)))
    return [extra[c] if c in extra else getattr(r, c) for c in cols]


def to_csv(rows: list[Record]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = columns(rows)
    w.writerow(cols)
    for r in sort_rows(rows):
        w.writerow(["" if v is None else int(v) if isinstance(v, bool) else v for v in values(r, cols)])
    return buf.getvalue()


def to_json(rows: list[Record]) -> str:
    cols = columns(rows)
    return json.dumps([dict(zip(cols, values(r, cols))) for r in sort_rows(rows)], indent=2) + "\n"


# Checks on the timings behind a summary (in the spirit of pyperf's `check`): the
# table's footer says how many points each concerns, with one example.
MIN_ITERATIONS = 10        # fewer kept iterations: the median and its test are weak
MAX_SPREAD = 2.0           # p95 / p5 above this: a noisy point (interference, unstable clock)
RESOLUTION_US = 1.0        # a median below 1 us is near MPI_Wtime's resolution on many systems
CHECKS = {
    "iterations": f"fewer than {MIN_ITERATIONS} iterations",
    "spread": f"a large spread (p95/p5 > {MAX_SPREAD:g})",
    "resolution": f"a median below {RESOLUTION_US:g} us, near the timer's resolution",
    "implausible": "a median below the one-message floor measured in its launch (left out of best)",
    "unstable": "times taken before a steady state, still so after re-measuring (left out of best)",
}


@dataclass(frozen=True)
class PointCheck:
    kind: str          # a key of CHECKS
    point: str         # 'collkit:ring allreduce p=4 64B'


def point_checks(r: Record) -> tuple[PointCheck, ...]:
    """What makes an ok point's timings doubtful (nothing for an untimed record)."""
    if r.time_median_us is None:
        return ()
    where = f"{r.label} {r.collective} p={r.ranks} {format_size(r.bytes)}"
    out = []
    if r.iterations < MIN_ITERATIONS:
        out.append("iterations")
    if r.time_p5_us and r.time_p95_us and r.time_p95_us / r.time_p5_us > MAX_SPREAD:
        out.append("spread")
    if r.time_median_us < RESOLUTION_US:
        out.append("resolution")
    if r.implausible:
        out.append("implausible")
    if r.unstable:
        out.append("unstable")
    return tuple(PointCheck(k, where) for k in out)


@dataclass(frozen=True)
class SummaryLine:
    collective: str
    mpi: str
    ranks: int
    bytes: int
    best: str
    best_us: float
    default: str | None
    default_us: float | None
    candidates: int
    # the best against the default (analysis/launches.py), Holm-adjusted over every
    # candidate's comparison with its default in the table (None where there is
    # nothing to compare: no default, or the default is the best)
    p_value: float | None = None
    checks: tuple[PointCheck, ...] = ()
    default_implausible: bool = False   # the default's median is below the launch's floor
    level: str = ""                     # how best and default were compared (launches.WITHIN, ...)
    too_few: bool = False               # between launches, too few of them to reach the level at all
    launches: tuple[int, int] = (0, 0)  # launches of the best and the default
    spread: float | None = None         # largest launch-to-launch spread of the two (max/min launch median)
    states: bool = False                # their launches fall into separate states
    oversubscribed: bool = False        # more ranks than cores on a host of their launches

    @property
    def compared(self) -> bool:
        return self.p_value is not None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < stats.ALPHA

    @property
    def ratio(self) -> float | None:
        """default / best, or None when there is no default or the difference is not
        significant (a tie): never a ratio that is noise. 1.0 when the default is the best."""
        if not (self.default_us and self.best_us):
            return None
        if self.compared and not self.significant:
            return None
        return self.default_us / self.best_us

    @property
    def tie(self) -> bool:
        return self.compared and not self.significant


def oversubscribed(r: Record) -> bool:
    """A launch of the record put more ranks on a host than it had cores (the launch
    record's cpus, campaign/launch_info.py)."""
    return bool(r.fields.get("oversubscribed"))


def summarise(rows: list[Record]) -> list[SummaryLine]:
    """Per collective, MPI library, rank count and size: the fastest `ok` point (lowest
    estimate: the median of its launch medians) and the library default's. Invalid or
    failed points never win, nor do unstable ones (record.py): they are not even
    candidates until a re-measure is steady, since their median may be a start-up cost.

    The best is called faster than the default only when the difference is significant
    at the level the two were measured (analysis/launches.py: launch-by-launch ratios
    inside shared launches, launches as blocks; launch medians between launches), two-sided, with
    Holm's correction at alpha = 0.01 over the comparisons of every candidate of the
    table with its default. Every candidate, not only the best: the best is the
    smallest of many, and testing only it would favour whichever was luckiest (the
    winner's curse). Holm controls the chance that any row claims a speed-up that is
    noise without assuming independence, and rejects at least as often as Bonferroni."""
    groups: dict[tuple, list[Record]] = {}
    for r in rows:
        if r.status == "ok" and r.time_median_us is not None and not r.unstable:
            groups.setdefault((r.collective, r.mpi, r.ranks, r.bytes), []).append(r)
    found = []
    for key, members in sorted(groups.items()):
        # a point faster than one message can travel is an artifact: never the best
        plausible = [r for r in members if not r.implausible] or members
        best = min(plausible, key=lambda r: r.time_median_us)
        default = next((r for r in members if r.library_default), None)
        found.append((key, members, best, default))
    timing = {id(r): launches.Timing.of(r) for _, members, _, _ in found for r in members}
    pairs = [(i, r) for i, (_, members, best, default) in enumerate(found)
             if default is not None and default is not best for r in members if r is not default]
    # a row's comparisons pool how much their ratios move from launch to launch
    tests = launches.compare_points([(timing[id(r)], timing[id(found[i][3])]) for i, r in pairs],
                                    groups=[i for i, _ in pairs])
    adjusted = launches.holm(tests)
    of_best = {i: (t, float(q)) for (i, r), t, q in zip(pairs, tests, adjusted) if r is found[i][2]}
    out = []
    for i, ((coll, mpi, ranks, size), members, best, default) in enumerate(found):
        test, p = of_best.get(i, (None, None))
        both = [timing[id(best)]] + ([timing[id(default)]] if default is not None else [])
        spreads = [t.spread for t in both if t.spread is not None]
        out.append(SummaryLine(coll, mpi, ranks, size, best.label, best.time_median_us,
                               default.label if default else None,
                               default.time_median_us if default else None, len(members),
                               p, tuple(c for r in members for c in point_checks(r)),
                               bool(default is not None and default.implausible),
                               test.level if test else "", bool(test and test.too_few()),
                               (both[0].n, both[1].n if len(both) > 1 else 0),
                               max(spreads) if spreads else None, any(t.states for t in both),
                               any(oversubscribed(r) for r in (best, default) if r is not None)))
    return out


def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


# Why a row's default/best holds no ratio, and what else a reader must know of it, in
# the summary's `note` column (the ratio column holds ratios only), each explained
# once under the table.
NOTES = {
    "tie": "best not significantly faster than the default (Holm-adjusted over {compared} comparisons of "
           "every candidate with its default, p >= {alpha:g})",
    "few": "best and default ran in different launches, too few of them for the launch test to reach "
           "p < {alpha:g} at all ({needed} launches a side at least; [measure] launches)",
    "floor": "the default's median is below the one-message floor measured in its launch: "
             "no ratio against a time no message could achieve",
    "states": "the launches of best or default fell into separate states (launch medians "
              f"{launches.STATE_GAP:g}x apart): a machine that draws a state per launch",
    "oversub": "more ranks than cores on a host: timings of an oversubscribed machine, good for trying the "
               "tool and for side-by-side ratios, not as evidence about a real machine",
}


def _ratio_cell(s: SummaryLine) -> str:
    return f"{s.ratio:.2f}x" if s.ratio and not s.default_implausible else "-"


def _notes(s: SummaryLine) -> list[str]:
    out = []
    if s.default_implausible:
        out.append("floor")
    elif s.tie:
        out.append("few" if s.too_few else "tie")
    if s.states:
        out.append("states")
    if s.oversubscribed:
        out.append("oversub")
    return out


def _spread_cell(s: SummaryLine) -> str:
    return f"{s.spread:.2f}x" if s.spread is not None else "-"


def checks_footer(lines: list[SummaryLine]) -> list[str]:
    """One line per kind of doubtful timing: how many points, and one of them."""
    out = []
    for kind, what in CHECKS.items():
        hits = [c for s in lines for c in s.checks if c.kind == kind]
        if hits:
            n = len(hits)
            out.append(f"warning: {n} point{'s' if n != 1 else ''} with {what}, e.g. {hits[0].point}")
    return out


def _levels_line(lines: list[SummaryLine]) -> str:
    """How the rows' verdicts were reached, and from how many launches."""
    by: dict[str, int] = {}
    for s in lines:
        if s.compared and s.level in launches.LEVEL_WORDS:
            by[s.level] = by.get(s.level, 0) + 1
    counts = sorted({n for s in lines for n in s.launches if n})
    span = (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}") if counts else "?"
    parts = ", ".join(f"{n} on {launches.LEVEL_WORDS[level]}" for level, n in sorted(by.items()))
    return (f"estimates: the median of each point's launch medians ({span} launches); spread: largest over "
            f"smallest launch median of best and default" + (f"; verdicts: {parts}" if parts else ""))


def summary_table(lines: list[SummaryLine], width: int | None = None) -> str:
    """One section per collective and library (its name on a line of its own:
    the rows then fit 100 columns with the longest algorithm names), all
    sections with the same column widths, then the notes and warnings."""
    header = ["ranks", "size", "best", "best_us", "default_us", "default/best", "spread", "note", "n"]
    sections: dict[str, list[list[str]]] = {}
    for s in lines:
        sections.setdefault(f"{s.collective}, {s.mpi}", []).append(
            [str(s.ranks), format_size(s.bytes), s.best, _us(s.best_us), _us(s.default_us), _ratio_cell(s),
             _spread_cell(s), ",".join(_notes(s)), str(s.candidates)])
    text = [render_sections(header, sections, right={0, 1, 3, 4, 5, 6, 8}, width=width),
            "n: algorithms measured ok at that point, the candidates for best", _levels_line(lines)]
    compared = sum(s.compared for s in lines)
    used = {n for s in lines for n in _notes(s)}
    family = sum(s.candidates - 1 for s in lines if s.default is not None and s.compared)
    text += [f"{key}: " + what.format(compared=family or compared, alpha=stats.ALPHA,
                                      needed=launches.needed_launches())
             for key, what in NOTES.items() if key in used]
    text.extend(checks_footer(lines))
    # the table, then its footer lines wrapped to the width
    return "\n".join([text[0]] + [w for line in text[1:]
                                   for w in textwrap.wrap(line, width or terminal_width(), subsequent_indent="  ")])


def problems_table(rows: list[Record], limit: int | None = 20) -> str:
    """Invalid and failed points (the first `limit`; None: all)."""
    bad = [r for r in sort_rows(rows) if r.status in ("invalid", "failed")]
    if not bad:
        return ""
    limit = len(bad) if limit is None else limit
    body = [[r.status, r.collective, r.label, f"p={r.ranks}", format_size(r.bytes), r.reason[:90]] for r in bad[:limit]]
    more = f"\n... and {len(bad) - limit} more (collkit export DIR)" if len(bad) > limit else ""
    return render(["status", "collective", "algorithm", "ranks", "size", "reason"], body) + more


def unstable_table(rows: list[Record], limit: int | None = 20) -> str:
    """Points whose standing record is marked unstable (kept out of the summary;
    the first `limit`, None: all)."""
    marked = [r for r in sort_rows(rows) if r.unstable]
    if not marked:
        return ""
    limit = len(marked) if limit is None else limit
    body = [[r.collective, r.label, f"p={r.ranks}", format_size(r.bytes), str(r.remeasures), r.unstable[:90]]
            for r in marked[:limit]]
    more = f"\n... and {len(marked) - limit} more (collkit export DIR)" if len(marked) > limit else ""
    return render(["collective", "algorithm", "ranks", "size", "re-measured", "why unstable"], body,
                  right={4}) + more


def skipped_table(rows: list[Record], limit: int = 12) -> str:
    """Why points were skipped, most frequent reason first, with a count and one
    point of each (reasons name the rank count or size where they depend on it)."""
    by: dict[str, list[Record]] = {}
    for r in sort_rows(rows):
        if r.status == "skipped":
            by.setdefault(r.reason or "(no reason recorded)", []).append(r)
    if not by:
        return ""
    ordered = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    body = [[str(len(rs)), f"{rs[0].label} {rs[0].collective} p={rs[0].ranks} {format_size(rs[0].bytes)}", reason]
            for reason, rs in ordered[:limit]]
    more = f"\n... and {len(ordered) - limit} more reasons (collkit export DIR)" if len(ordered) > limit else ""
    return render(["points", "e.g.", "reason"], body, right={0}) + more
