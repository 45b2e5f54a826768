"""``collkit predict``: a profiled program's time in collectives under its library's
default and under a collkit rules file (or forced algorithms, as `collkit trial
--algorithm` runs them), from a campaign's per-point medians.

Per class (profile_file.CallClass) the campaign point is spec_from_profile.point_of's
(one home of that mapping). The default variant is the point "<mpi>:default" of the
profile's MPI; the rules variant is what libcollkit-preload would run for the call
(docs/preload.md): the rules' first matching line (tune/writers/collkit.py, the one
parser), a libcollkit algorithm -> the point "collkit:<name>", "library" or no line ->
the default point; an algorithm the preload would not run on this call (a
power-of-two algorithm on another rank count, a count below its minimum, a topology
constraint, an fp_rank_variant algorithm on a floating-point reduction the file does
not allow) is the library's default too, and the class says why.

A class's prediction is calls x the point's median, its interval calls x the
median's 95 % interval (analysis/stats.py; a point under 6 iterations has none, and
then neither have the totals). Points that are not ok or are unstable (record.py;
tune leaves them out alike) are not used: the class is uncovered, says why, and its
profiled time is carried unchanged into both totals. The totals' intervals are the
sums of the classes' bounds: each class's interval holds with 95 %, the sum of
bounds with at least that (the bounds move together only if every class errs the
same way), so it is wider than a joint 95 % interval, never narrower.

Waiting and working (issue #41). Where the profile splits a class's time
(profile_file.ClassSplit, program/waits.py's rule), the class's prediction is its
busiest rank's waiting, as profiled and stated unchanged by any choice (it is the
program's imbalance), plus calls x the campaign's working time per call (the
median over iterations of waits.call_working, campaign/working.py) measured under
the class's own conditions (spec_from_profile.program_conditions: back to back,
the profiled gap and per-rank arrival skew). A record measured under other
conditions than the profile's is refused with one line, unless the point's
conditions are another class's of this profile (two classes of one point: the
spec measures the busier one's) or --synchronised asks for the working time of
synchronised calls (the slowest rank's time after a barrier). A class without a
split (a version-1 profile, calls that could not be matched) is predicted as
before: calls x the synchronised median of the whole call.

Waiting from several runs (issue #50). One run's waiting can be atypical (hpcc: one
run waited 7.4 ms in a class where 16 others waited 2.4-3.5 ms, and the prediction
was 59.6 % off): with other profiles of the same program (--waiting-from), a class's
waiting is its calls x the median, over every profile that has the class split, of
its waiting per call.

Few calls (issue #50). A class the program called fewer than FEW_CALLS times has
too few calls of its own to predict: its profiled time (waiting included) comes from
fewer calls than a 95 % interval of their median needs, so whatever a choice would
change there is within its noise. It stays in both totals as predicted, and the
output says which classes these are and what they weigh (their profiled time, and
its share of the time in collectives), so that a prediction resting on them is read
as such.

The implied change of wall time is rules total minus default total: it assumes the
time saved inside collectives is saved on the program's critical path, which holds
for bulk-synchronous programs and overstates it where collectives overlap other work."""

from __future__ import annotations

import argparse
import json
import statistics
import textwrap
from dataclasses import dataclass
from pathlib import Path

from collkit.analysis import stats
from collkit.campaign import conditions as conds
from collkit.campaign import working
from collkit.campaign.record import Record
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError
from collkit.common.table import render, terminal_width
from collkit.program import profile_file, rules_choice
from collkit.program.profile_file import CallClass, Profile
from collkit.program.rules_choice import LIBRARY
from collkit.program.spec_from_profile import describe, point_of, program_conditions

# Below this many calls a class's own calls give no 95 % interval of their median.
FEW_CALLS = stats.DISTRIBUTION_FREE_LAUNCHES


@dataclass(frozen=True)
class ClassPrediction:
    call: CallClass
    covered: bool                                # False: the profiled time stands in both totals
    note: str                                    # why uncovered, or why the rules' choice falls back
    default_s: float | None                      # median seconds per call of "<mpi>:default"
    default_ci: tuple[float, float] | None       # its 95 % interval, seconds per call
    choice: str                                  # what the preload runs: "library" or an algorithm
    rules_s: float | None
    rules_ci: tuple[float, float] | None
    default_total_s: float                       # calls x default_s (profiled time when uncovered)
    default_total_ci: tuple[float, float] | None
    rules_total_s: float
    rules_total_ci: tuple[float, float] | None
    # The profiled waiting at the class's busiest rank, in both totals (None: no
    # split, default_s and rules_s are then whole calls); what default_s and
    # rules_s are: BASIS_PROGRAM, BASIS_SYNCHRONISED or BASIS_WHOLE.
    waiting_s: float | None = None
    basis: str = ""
    waiting_runs: int = 1                        # the profiles its waiting is the median of

    @property
    def few_calls(self) -> bool:
        """Too few calls of its own to predict (FEW_CALLS)."""
        return self.call.calls < FEW_CALLS

    def to_json(self) -> dict:
        return {"class": {k: getattr(self.call, k) for k in ("collective", "comm", "comm_size", "bytes", "datatype",
                                                           "dtype", "op", "root", "in_place", "calls", "time_max_s")},
                "waiting_s": self.waiting_s, "waiting_runs": self.waiting_runs, "basis": self.basis,
                "few_calls": self.few_calls,
                "covered": self.covered, "note": self.note, "default_s": self.default_s,
                "default_ci": self.default_ci, "choice": self.choice, "rules_s": self.rules_s,
                "rules_ci": self.rules_ci, "default_total_s": self.default_total_s,
                "default_total_ci": self.default_total_ci, "rules_total_s": self.rules_total_s,
                "rules_total_ci": self.rules_total_ci}


@dataclass(frozen=True)
class Prediction:
    mpi: str
    campaign: Path
    rules: Path | None                           # the rules file predicted
    wall_s: float                                # the profile's wall time
    classes: tuple[ClassPrediction, ...]         # sorted by profiled time, largest first
    default_total_s: float
    default_total_ci: tuple[float, float] | None  # None when a covered class has no interval
    rules_total_s: float
    rules_total_ci: tuple[float, float] | None
    measured_total_s: float                      # the profile's time in collectives
    uncovered_s: float                           # profiled time of uncovered classes, in both totals
    forced: tuple[tuple[str, str], ...] = ()     # or the (collective, algorithm)s forced instead

    @property
    def waiting_total_s(self) -> float:
        """The profiled waiting in both totals: of every class with a split (an
        uncovered one's is in its profiled time)."""
        return sum(x.waiting_s for x in self.classes if x.waiting_s is not None)

    @property
    def few_calls_s(self) -> float:
        """The profiled time of the classes with too few calls to predict."""
        return sum(x.call.time_max_s for x in self.classes if x.few_calls)

    def working_total_s(self, variant: str) -> float:
        """The working of the classes with a split under the default ("default")
        or the choice ("rules"): predicted where covered, profiled where not."""
        return sum((x.default_total_s if variant == "default" else x.rules_total_s) - x.waiting_s
                   for x in self.classes if x.waiting_s is not None)

    @property
    def has_choice(self) -> bool:
        """Whether a choice (rules or forced algorithms) is predicted beside the default."""
        return self.rules is not None or bool(self.forced)

    @property
    def wall_change_s(self) -> float:
        """Implied change of wall time: rules total minus default total."""
        return self.rules_total_s - self.default_total_s

    @property
    def wall_change_pct(self) -> float | None:
        return 100.0 * self.wall_change_s / self.wall_s if self.wall_s > 0 else None

    def to_json(self) -> dict:
        return {"mpi": self.mpi, "campaign": str(self.campaign),
                "rules": str(self.rules) if self.rules else None,
                "forced": [list(a) for a in self.forced], "wall_s": self.wall_s,
                "measured_total_s": self.measured_total_s, "uncovered_s": self.uncovered_s,
                "default_total_s": self.default_total_s, "default_total_ci": self.default_total_ci,
                "rules_total_s": self.rules_total_s, "rules_total_ci": self.rules_total_ci,
                "wall_change_s": self.wall_change_s, "wall_change_pct": self.wall_change_pct,
                "waiting_total_s": self.waiting_total_s, "few_calls_s": self.few_calls_s,
                "few_calls_classes": sum(1 for x in self.classes if x.few_calls),
                "working_default_total_s": self.working_total_s("default"),
                "working_rules_total_s": self.working_total_s("rules"),
                "classes": [c.to_json() for c in self.classes]}


# ------------------------------------------------------------------ inputs
def _records(campaign_dir: Path) -> list[Record]:
    if not Path(campaign_dir).is_dir():
        raise UserError(f"--campaign {campaign_dir}: not a directory; give a campaign directory that "
                        "`collkit run` made")
    return Campaign.open(Path(campaign_dir)).records()


def _key(r: Record) -> tuple:
    return (r.backend, r.mpi, r.algorithm, r.collective, r.ranks, r.bytes, r.dtype, r.op, r.root, r.in_place)


# The index's second key of a backend-mpi record: its library's own name of the
# algorithm (record.native), which library:NAME rules use.
NATIVE = "mpi native"


def _point_key(backend: str, mpi: str, algorithm: str, p) -> tuple:
    return (backend, mpi, algorithm, p.collective, p.ranks, p.bytes, p.dtype, p.op, p.root, p.in_place)


# ------------------------------------------------------------------ the prediction
def _usable(rec: Record | None, what: str) -> str:
    """'' when the record can be used, else why not."""
    if rec is None:
        return f"the campaign has no {what} point"
    if rec.status != "ok" or rec.time_median_us is None:
        return f"{what} {rec.status}{': ' + rec.reason if rec.reason else ''}"
    if rec.unstable:
        return f"{what} unstable: {rec.unstable}"
    return ""


def _seconds(rec: Record) -> tuple[float, tuple[float, float] | None]:
    ci = stats.record_median_ci(rec)
    return rec.time_median_us * 1e-6, (ci[0] * 1e-6, ci[1] * 1e-6) if ci is not None else None


BASIS_PROGRAM = "working under the program's conditions"
BASIS_SYNCHRONISED = "working of synchronised calls"
BASIS_WHOLE = "whole calls, synchronised"


class _OtherConditions(Exception):
    """A record measured under other conditions than the profile's (one line at the top)."""


@dataclass(frozen=True)
class _Want:
    """What a split class asks of its records: its own conditions, the conditions any
    class of this profile on the same point was given (the spec measures the
    busier one's), or synchronised calls (--synchronised)."""
    own: conds.Conditions | None       # None: synchronised asked for
    point: tuple[conds.Conditions, ...]


def _per_call(rec: Record, want: _Want | None, campaign_dir: Path, c: CallClass,
              what: str) -> tuple[float, tuple[float, float] | None, str, str]:
    """(seconds a call, its interval, basis, note) of one record for class c."""
    if want is None:
        return (*_seconds(rec), BASIS_WHOLE, "")
    got = rec.conditions
    if want.own is None:
        if got.get("mode") != "synchronised":
            raise _OtherConditions(f"{what} was measured under program conditions and --synchronised asks "
                                   "for synchronised calls; give a synchronised campaign, or leave out --synchronised")
        return (*_seconds(rec), BASIS_SYNCHRONISED, "")
    if not conds.matches(got, want.own):
        if not any(conds.matches(got, other) for other in want.point):
            mode = got.get("mode", "synchronised")
            raise _OtherConditions(
                f"{what} was measured under {mode} conditions"
                + (" of another profile" if mode == "program" else "")
                + f", not those of the profile's {describe(c)} calls (gap {want.own.gap_us:g} us, arrival skew per "
                "rank); measure them (collkit spec --from-profile PROFILE, then collkit run), or give "
                "--synchronised to predict working times from synchronised calls")
        note = "measured under the conditions of another class of the same point"
    else:
        note = ""
    w = rec.working or working.of_record(rec.fields, campaign_dir)
    if not w or w.get("median_us") is None:
        raise _OtherConditions(f"{what} has no per-rank arrivals and exits to take its working time from; "
                               "measure it again with this collkit")
    ci = w.get("median_ci_us")
    return (w["median_us"] * 1e-6, (ci[0] * 1e-6, ci[1] * 1e-6) if ci else None, BASIS_PROGRAM, note)


def _scale(ci: tuple[float, float] | None, calls: int) -> tuple[float, float] | None:
    return (calls * ci[0], calls * ci[1]) if ci is not None else None


def _uncovered(c: CallClass, why: str, choice: str) -> ClassPrediction:
    """Its profiled time in both totals; a split's waiting is part of it (so the
    totals' waiting and working are those of every class with a split, as a
    trial's runs measure them)."""
    t = c.time_max_s
    return ClassPrediction(c, False, why, None, None, choice, None, None, t, (t, t), t, (t, t),
                           waiting_s=c.split.waiting_s if c.split is not None else None)


def _waiting(profile: Profile, others: tuple[Profile, ...]) -> dict[tuple, tuple[float, int]]:
    """Per split class of the profile: its waiting (its calls x the median over the
    profiles that split it of their waiting per call) and how many profiles that is."""
    per_call: dict[tuple, list[float]] = {}
    for prof in (profile, *others):
        for c in prof.classes:
            if c.split is not None and c.calls > 0:
                per_call.setdefault(c.key, []).append(c.split.waiting_s / c.calls)
    out = {}
    for c in profile.classes:
        if c.split is not None:
            values = per_call[c.key]
            out[c.key] = (c.split.waiting_s if len(values) == 1 else c.calls * statistics.median(values), len(values))
    return out


def _predict_class(c: CallClass, mpi: str, index: dict[tuple, Record], picked: rules_choice.Choice | None,
                   want: _Want | None, campaign_dir: Path,
                   waits: dict[tuple, tuple[float, int]] | None = None) -> ClassPrediction:
    p = point_of(c)
    choice = LIBRARY
    if isinstance(p, str):
        return _uncovered(c, f"not measurable: {p}", choice)
    note = ""
    if picked is not None:
        choice = picked.rule
        if picked.fallback:
            note = (f"the preload runs the library, not {choice}: "
                    f"{rules_choice.REASON_TEXT[picked.fallback]}")
    default = index.get(_point_key("mpi", mpi, "default", p))
    why = _usable(default, f"{mpi}:default")
    if why:
        return _uncovered(c, why, choice)
    d_s, d_ci, basis, cond_note = _per_call(default, want, campaign_dir, c, f"{mpi}:default")
    r_s, r_ci = d_s, d_ci
    if choice != LIBRARY and not note:
        if choice.startswith(rules_choice.LIBRARY_ALGORITHM):
            # library:NAME: the library's own algorithm, switched per call by the preload;
            # the campaign forced it as backend mpi, NAME being the library's (native) name
            native = choice[len(rules_choice.LIBRARY_ALGORITHM):]
            chosen, what = index.get(_point_key(NATIVE, mpi, native, p)), f"{mpi}:{native} (forced)"
        else:
            chosen, what = index.get(_point_key("collkit", mpi, choice, p)), f"collkit:{choice}"
        why = _usable(chosen, what)
        if why:
            return _uncovered(c, why, choice)
        r_s, r_ci, _, _ = _per_call(chosen, want, campaign_dir, c, what)
    note = "; ".join(n for n in (note, cond_note) if n)
    waiting, runs = (waits or {}).get(c.key, (c.split.waiting_s, 1)) if c.split is not None else (None, 1)
    waiting = waiting if want is not None else None
    base = waiting or 0.0

    def total(ci):
        return (base + c.calls * ci[0], base + c.calls * ci[1]) if ci is not None else None
    return ClassPrediction(c, True, note, d_s, d_ci, choice, r_s, r_ci, base + c.calls * d_s, total(d_ci),
                           base + c.calls * r_s, total(r_ci), waiting_s=waiting, basis=basis, waiting_runs=runs)


def _wants(profile: Profile, synchronised: bool) -> dict[tuple, _Want | None]:
    """Per class key, what its records must have been measured under (None: no split)."""
    if synchronised:
        return {c.key: _Want(None, ()) if c.split is not None else None for c in profile.classes}
    own: dict[tuple, conds.Conditions] = {}
    by_point: dict[object, list[conds.Conditions]] = {}
    for c in profile.classes:
        cond = program_conditions(c) if c.split is not None else None
        p = point_of(c)
        if isinstance(cond, conds.Conditions) and not isinstance(p, str):
            own[c.key] = cond
            by_point.setdefault((p.collective, p.ranks, p.bytes, p.dtype, p.op, p.root, p.in_place),
                                []).append(cond)
    out: dict[tuple, _Want | None] = {}
    for c in profile.classes:
        p = point_of(c)
        if c.key not in own or isinstance(p, str):
            out[c.key] = None
            continue
        out[c.key] = _Want(own[c.key], tuple(by_point[(p.collective, p.ranks, p.bytes, p.dtype, p.op, p.root,
                                                       p.in_place)]))
    return out


def _total(parts: list[ClassPrediction], value, interval) -> tuple[float, tuple[float, float] | None]:
    total = sum(value(x) for x in parts)
    cis = [interval(x) for x in parts]
    if any(ci is None for ci in cis):
        return total, None
    return total, (sum(ci[0] for ci in cis), sum(ci[1] for ci in cis))


def predict_profile(profile: Profile, campaign_dir: Path, rules: Path | None,
                    forced: tuple[tuple[str, str], ...] = (), synchronised: bool = False,
                    waiting_from: tuple[Profile, ...] = ()) -> Prediction:
    """The prediction for a profile from a campaign (and a rules file, or
    algorithms forced as `collkit trial --algorithm` forces them): the contract
    `collkit trial` relies on. UserError (one line) on a campaign or rules file
    that cannot be read, a campaign without the profile's MPI, or one measured
    under other conditions than the profile's (unless synchronised: then the
    split classes' working comes from synchronised calls)."""
    if rules is not None and forced:
        raise ValueError("predict a rules file or forced algorithms, not both")
    for other in waiting_from:
        if (other.mpi_name, other.ranks) != (profile.mpi_name, profile.ranks):
            raise UserError(f"--waiting-from {other.path}: a profile of {other.ranks} ranks on {other.mpi_name}, the "
                            f"program's ran {profile.ranks} on {profile.mpi_name}; give profiles of the same program, "
                            "MPI and rank count")
    waits = _waiting(profile, waiting_from)
    if profile.trace is not None and not synchronised:
        # a trace asks for the calls' detail: without clock data it cannot be split
        profile_file.require_split(profile)
    parsed = (rules_choice.load_rules(rules, profile.mpi_name) if rules is not None
              else rules_choice.forced(forced) if forced else None)
    records = _records(campaign_dir)
    mpi = profile.mpi_name
    mpis = sorted({r.mpi for r in records if r.backend == "mpi"})
    if mpis and mpi not in mpis:
        raise UserError(f"--campaign {campaign_dir}: measured MPI {', '.join(mpis)}, the profile ran on {mpi}; "
                        f"measure the profile's MPI (collkit spec --from-profile ... --mpi {mpi})")
    index = {_key(r): r for r in records}
    index |= {(NATIVE, r.mpi, r.native, *_key(r)[3:]): r for r in records
              if r.backend == "mpi" and r.algorithm != "default" and r.native}
    wants = _wants(profile, synchronised)
    try:
        classes = sorted(profile.classes, key=lambda c: -c.time_max_s)
        # what the preload runs for every class, asked of its fallback rule at once
        picked = rules_choice.choose_all(parsed, classes) if parsed is not None else [None] * len(classes)
        parts = [_predict_class(c, mpi, index, ch, wants[c.key], Path(campaign_dir), waits)
                 for c, ch in zip(classes, picked)]
    except _OtherConditions as e:
        raise UserError(f"--campaign {campaign_dir}: {e}") from None
    d_total, d_ci = _total(parts, lambda x: x.default_total_s, lambda x: x.default_total_ci)
    r_total, r_ci = _total(parts, lambda x: x.rules_total_s, lambda x: x.rules_total_ci)
    return Prediction(mpi=mpi, campaign=Path(campaign_dir), rules=Path(rules) if rules is not None else None,
                      wall_s=profile.wall_s, classes=tuple(parts), default_total_s=d_total, default_total_ci=d_ci,
                      rules_total_s=r_total, rules_total_ci=r_ci, measured_total_s=profile.class_time_sum_s,
                      uncovered_s=sum(x.call.time_max_s for x in parts if not x.covered), forced=tuple(forced))


# ------------------------------------------------------------------ output
def _t(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-5:
        return f"{s * 1e6:.2f}us"
    return f"{s * 1e6:.1f}us" if s < 1e-3 else f"{s * 1e3:.2f}ms" if s < 1 else f"{s:.3f}s"


def _ci(ci: tuple[float, float] | None) -> str:
    return f"[{_t(ci[0])}, {_t(ci[1])}]" if ci is not None else "no interval"


def table(pred: Prediction, width: int | None = None) -> str:
    """Per class: a line naming it (calls, profiled time), then one row per variant
    (the default; the rules' choice) with its time per call and in total, each with
    its 95 % interval, the rows of every class in the same columns; then the totals.
    Stacked so that it fits 100 columns with the longest class and algorithm names."""
    width = width or terminal_width()
    headers = ["variant", "per call", "95% interval", "total", "95% interval"]
    blocks = []
    for x in pred.classes:
        c = x.call
        rows = [["default", _t(x.default_s), _ci(x.default_ci) if x.covered else "",
                 _t(x.default_total_s), _ci(x.default_total_ci) if x.covered else "(profiled)"]]
        if pred.has_choice:
            variant = "rules" if pred.rules is not None else "forced"
            rows.append([f"{variant}: {x.choice}", _t(x.rules_s), _ci(x.rules_ci) if x.covered else "",
                         _t(x.rules_total_s), _ci(x.rules_total_ci) if x.covered else "(profiled)"])
        head = f"{describe(c)}: {c.calls} calls, profiled {_t(c.time_max_s)}"
        if x.few_calls:
            head += f"; too few calls to predict (under {FEW_CALLS})"
        if x.covered and x.waiting_s is not None:
            runs = f"median of {x.waiting_runs} profiled runs" if x.waiting_runs > 1 else "profiled"
            head += f"; waiting {_t(x.waiting_s)} ({runs}, unchanged) + calls x {x.basis}"
        elif x.covered:
            head += f"; calls x {x.basis}" + (f" ({c.split_reason})" if getattr(c, "split_reason", "") else "")
        note = textwrap.wrap(x.note, width - 4, initial_indent="  note: ", subsequent_indent="    ") if x.note else []
        blocks.append((textwrap.wrap(head, width), rows, note))
    every = [r for _, rows, _ in blocks for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in every]) for i, h in enumerate(headers)]

    def indented(rows: list[list[str]]) -> list[str]:
        return ["  " + ln for ln in render(headers, rows, right={1, 3}, width=width - 2,
                                            min_widths=widths).splitlines()]
    out = indented([])            # the header and its rule, once
    for head, rows, note in blocks:
        out += head + indented(rows)[2:] + note
    out.append("")
    totals = (f"time in collectives: profiled {_t(pred.measured_total_s)}; predicted under the default "
              f"{_t(pred.default_total_s)} {_ci(pred.default_total_ci)}"
              + (f", under the rules {_t(pred.rules_total_s)} {_ci(pred.rules_total_ci)}" if pred.has_choice else ""))
    out += textwrap.wrap(totals, width)
    if any(x.waiting_s is not None for x in pred.classes):
        out += textwrap.wrap(f"of which, in the classes with a split, waiting {_t(pred.waiting_total_s)} (profiled, the same under any choice) "
                             f"and working {_t(pred.working_total_s('default'))} under the default"
                             + (f", {_t(pred.working_total_s('rules'))} under the rules" if pred.has_choice else ""),
                             width)
    few = [x for x in pred.classes if x.few_calls]
    if few:
        share = 100.0 * pred.few_calls_s / pred.measured_total_s if pred.measured_total_s > 0 else 0.0
        out += textwrap.wrap(f"{len(few)} class(es) with too few calls to predict (under {FEW_CALLS} each): they "
                             f"weigh {_t(pred.few_calls_s)} profiled, {share:.1f} % of the time in collectives; "
                             "read what the prediction says of them as noise", width)
    if pred.uncovered_s > 0:
        n = sum(1 for x in pred.classes if not x.covered)
        out += textwrap.wrap(f"{n} class(es) not covered by the campaign: their profiled {_t(pred.uncovered_s)} "
                             "stands unchanged in both totals", width)
    if pred.has_choice:
        pct = pred.wall_change_pct
        sign = "+" if pred.wall_change_s >= 0 else "-"
        out += textwrap.wrap(f"implied change of wall time: {sign}{_t(abs(pred.wall_change_s))}"
                             + (f" ({pct:+.2f} % of the profiled {_t(pred.wall_s)})" if pct is not None else "")
                             + " (rules total minus default total)", width)
    return "\n".join(out) + "\n"


def run(ns: argparse.Namespace) -> int:
    profile = profile_file.load(ns.profile, need_complete=True)
    others = tuple(profile_file.load(p, need_complete=True) for p in ns.waiting_from)
    pred = predict_profile(profile, Path(ns.campaign), Path(ns.rules) if ns.rules else None,
                           synchronised=ns.synchronised, waiting_from=others)
    if ns.json:
        print(json.dumps(pred.to_json(), indent=2))
    else:
        print(table(pred), end="")
    return 0


DESCRIPTION = """\
Predict a profiled program's time in collectives under its MPI library's default and
under a collkit rules file, per call class and in total, from a campaign's medians
and their 95 % intervals (a campaign of `collkit spec --from-profile`), and the
implied change of the program's wall time."""

EPILOG = """\
examples:
  collkit predict app.profile.json --campaign results/app
  collkit predict app.profile.json --campaign results/app --rules app.rules --json
Classes the campaign has no usable point for keep their profiled time in both totals.
See docs/application-loop.md."""


def add_parser(sub) -> None:
    p = sub.add_parser("predict", help="predict a profiled program's time in collectives from a campaign",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("profile", metavar="FILE", help="a profile of `collkit profile`")
    p.add_argument("--campaign", required=True, metavar="DIR", help="a campaign directory of `collkit run`")
    p.add_argument("--rules", metavar="FILE", help="a collkit rules file (docs/preload.md)")
    p.add_argument("--synchronised", action="store_true",
                   help="take the working time of split classes from synchronised calls (a campaign not "
                        "measured under the profile's conditions)")
    p.add_argument("--waiting-from", metavar="FILE", action="append", default=[],
                   help="another profile of the same program, MPI and rank count (repeatable): each split "
                        "class's waiting is the median per call over all of them (one run's can be atypical)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
