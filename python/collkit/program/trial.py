"""``collkit trial``: the program itself, N runs with and N without a choice of
algorithms, alternating, with significance, its output compared, and the
prediction beside the measurement (docs/application-loop.md, "Trial").

Every run goes through the profiler (program/profile.py run_profiled), so both
variants carry libcollkit-preload: the default in pass-through, the choice with
its algorithms, its rules, or the library's own tuning file (program/trial_choice.py).
The preload's own cost is then the same on both sides and the time in
collectives of each run comes from its profile.

A run that fails (non-zero exit, incomplete profile) stops the trial: under the
choice, that the choice breaks the program is the finding, and under the
default the machine or the program is broken; either way the remaining runs
would measure nothing worth their time. Nothing from the failed run counts; the
trial exits with its status (1 where the launcher said 0 but the profile is
incomplete). A difference in the output stops it too, with exit status 1.

A run past --timeout (seconds per run), SIGINT or SIGTERM stops that run with
every process it started (run_profiled, launch/watch.py) and the trial with
it: one line, exit status 2, and the JSON with the runs measured until then."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, TextIO

from collkit.common import argtypes, atomic
from collkit.common.errors import UserError
from collkit.common.table import render, terminal_width
from collkit.launch import watch
from collkit.mpis import known
from collkit.program import trial_choice as choices
from collkit.program import output_check, profile_file
from collkit.program.predict import Prediction
from collkit.program.trial_stats import (CHOICE, DEFAULT, MAX_RUNS, MIN_RUNS, Comparison, balanced_order,
                                         compare)

FORMAT = "collkit-trial"
VERSION = 2      # 2: "prediction" is `collkit predict --json`'s object; "timeout_s"
MAX_WARMUP = 10
STDERR_TAIL = 300     # characters of a failed run's standard error in its one line

RunFn = Callable[..., object]            # run_profiled's signature (program/profile.py)
PredictFn = Callable[..., Prediction]    # predict_profile's signature (program/predict.py)

# TrialResult.status
COMPLETE, OUTPUT_CHANGED, RUN_FAILED = "complete", "output changed", "run failed"
TIMED_OUT, INTERRUPTED = "timed out", "interrupted"     # both: one line and exit status 2


@dataclass(frozen=True)
class TrialSettings:
    mpi: str
    command: tuple[str, ...]
    choice: choices.Choice
    runs: int                                  # per variant, measured
    warmup: int = 1                            # per variant, run first and not counted
    check: output_check.OutputCheck = field(default_factory=output_check.OutputCheck)
    campaign: Path | None = None
    profile: Path | None = None                # the profile the prediction uses
    timeout: float | None = None               # seconds per run; None: no limit
    synchronised: bool = False                 # predict's --synchronised
    waiting_from: tuple[Path, ...] = ()        # predict's --waiting-from: other profiles of the program


@dataclass(frozen=True)
class RunRecord:
    index: int                 # 1-based, in the order run
    variant: str
    warmup: bool
    wall_s: float
    collective_time_s: float
    # The run's profile's waiting and working (issue #41), summed over its classes
    # with a split (the busiest rank of each); None when none has one.
    waiting_s: float | None = None
    working_s: float | None = None
    # The sum of its classes' busiest-rank times: the aggregate a prediction is
    # of (Profile.class_time_sum_s; collective_time_s is the busiest rank's).
    class_time_sum_s: float | None = None

    def to_json(self) -> dict:
        return {"index": self.index, "variant": self.variant, "warmup": self.warmup,
                "wall_s": self.wall_s, "collective_time_s": self.collective_time_s,
                "waiting_s": self.waiting_s, "working_s": self.working_s,
                "class_time_sum_s": self.class_time_sum_s}


def _split_totals(prof: profile_file.Profile) -> tuple[float | None, float | None]:
    """(waiting, working) summed over the profile's classes that have a split."""
    split = [c.split for c in prof.classes if c.split is not None]
    if not split:
        return None, None
    return sum(x.waiting_s for x in split), sum(x.working_s for x in split)


@dataclass
class TrialResult:
    status: str = COMPLETE            # COMPLETE, OUTPUT_CHANGED, RUN_FAILED, TIMED_OUT or INTERRUPTED
    exit_status: int = 0
    message: str = ""
    runs: list[RunRecord] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    prediction: Prediction | None = None
    reference_values: int = 0         # how many values the output check compares per run
    # --library-autotuner: how many measured choice runs dumped a tuning state other than
    # the default runs' (None: another choice, or no dump to compare)
    autotuner_changed: int | None = None

    def measured(self, variant: str, attr: str) -> list[float]:
        return [getattr(r, attr) for r in self.runs if r.variant == variant and not r.warmup]


def plan(settings: TrialSettings) -> list[tuple[str, bool]]:
    """(variant, warm-up?) of every run: warm-up pairs first, then the measured
    ones, one ABBA sequence over both (trial_stats.balanced_order)."""
    order = balanced_order(settings.warmup + settings.runs)
    return [(v, i < 2 * settings.warmup) for i, v in enumerate(order)]


def _tail(f) -> str:
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - 4 * STDERR_TAIL))
    return " ".join(f.read().decode("utf-8", "replace").split())[-STDERR_TAIL:]


def _variant_args(settings: TrialSettings, variant: str, dump: Path | None = None) -> dict:
    """The run's choice; with `dump`, the library's tuning state is written there (its
    autotuner runs under the choice)."""
    if dump is not None:
        backend = _backend(settings.mpi)
        env = backend.tuning_dump_env(dump) if variant == DEFAULT else backend.autotuner_env(dump)
        return {"extra_env": env}
    if variant == DEFAULT:
        return {}
    c = settings.choice
    return {"algorithms": c.algorithms, "rules": c.rules, "extra_env": dict(c.extra_env) or None}


def _backend(mpi: str):
    from collkit import backends
    return backends.backend_for(known.find(mpi).family)


def _autotuner_changed(dumps: Path, runs: list[RunRecord]) -> int | None:
    """How many measured choice runs dumped a tuning state unlike every measured
    default run's; None when a run wrote none (nothing to tell from)."""
    def read(r: RunRecord) -> bytes | None:
        path = dumps / f"{r.index}.dump"
        return path.read_bytes() if path.is_file() else None
    measured = [r for r in runs if not r.warmup]
    plain = [read(r) for r in measured if r.variant == DEFAULT]
    tuned = [read(r) for r in measured if r.variant == CHOICE]
    if not plain or not tuned or None in plain or None in tuned:
        return None
    return sum(t not in plain for t in tuned)


def _predict(settings: TrialSettings, predict_fn: PredictFn, profile: profile_file.Profile) -> Prediction:
    """The prediction for the choice: its collkit rules file or its forced algorithms."""
    c = settings.choice
    others = tuple(profile_file.load(p, need_complete=True) for p in settings.waiting_from)
    return predict_fn(profile, settings.campaign, c.rules, forced=c.algorithms, synchronised=settings.synchronised,
                      waiting_from=others)


def _stopped(where: str, variant: str, exc: BaseException) -> tuple[str, str]:
    """The status and the one line of a trial stopped by a run's timeout or an interrupt."""
    if isinstance(exc, watch.TimedOut):
        fix = ("the default runs finish, so the choice makes the program hang or crawl: leave it out, or give "
               "a longer --timeout if such a run may take that long" if variant == CHOICE else
               "give a longer --timeout (seconds per run), or find where the program hangs")
        return TIMED_OUT, (f"{where} ran past --timeout {exc.seconds:g} s and was stopped with every process it "
                           f"started; {fix}")
    name = exc.name if isinstance(exc, watch.Interrupted) else "an interrupt"
    return INTERRUPTED, (f"{name} arrived during {where}: the program was stopped with every process it started "
                         "and the trial ends here; run the trial again to finish it")


def execute(settings: TrialSettings, run_fn: RunFn, predict_fn: PredictFn | None = None,
            progress: TextIO = sys.stderr) -> TrialResult:
    """The runs in plan order, the output check and the verdicts. A run past
    settings.timeout (watch.TimedOut) or an interrupt (KeyboardInterrupt, as
    watch.Interrupted is for SIGINT and SIGTERM) ends the trial with TIMED_OUT
    or INTERRUPTED, exit status 2, and the runs measured until then."""
    result = TrialResult()
    dumps = None
    if settings.choice.kind == choices.LIBRARY_AUTOTUNER:
        dumps = Path(tempfile.mkdtemp(prefix="collkit-trial-dumps-"))
    try:
        return _execute(settings, run_fn, predict_fn, progress, result, dumps)
    finally:
        if dumps is not None:
            shutil.rmtree(dumps, ignore_errors=True)


def _execute(settings: TrialSettings, run_fn: RunFn, predict_fn: PredictFn | None, progress: TextIO,
             result: TrialResult, dumps: Path | None) -> TrialResult:
    where, variant = "the prediction before the first run", DEFAULT
    try:
        if settings.campaign is not None and settings.profile is not None:
            result.prediction = _predict(settings, predict_fn,
                                         profile_file.load(settings.profile, need_complete=True))
        reference: list[str] | None = None
        defaults_checked = 0
        steps = plan(settings)
        for k, (variant, warm) in enumerate(steps, 1):
            where = label = f"run {k} of {len(steps)} ({variant}{', warm-up' if warm else ''})"
            with tempfile.TemporaryFile() as err:
                res = run_fn(settings.mpi, list(settings.command), stdout=subprocess.PIPE, stderr=err,
                             timeout=settings.timeout,
                             **_variant_args(settings, variant, dumps / f"{k}.dump" if dumps else None))
                prof = getattr(res, "profile", None)
                if res.exit_status != 0 or prof is None or not prof.complete:
                    why = (f"exit status {res.exit_status}" if res.exit_status != 0 else
                           f"incomplete profile ({prof.incomplete_reason if prof else 'none written'})")
                    tail = _tail(err)
                    result.status, result.exit_status = RUN_FAILED, res.exit_status or 1
                    result.message = (f"{label} failed: {why}"
                                      + (f"; its standard error ends: {tail}" if tail else ""))
                    return result
            waiting, work = _split_totals(prof)
            record = RunRecord(index=k, variant=variant, warmup=warm, wall_s=float(res.wall_s),
                               collective_time_s=prof.collective_time_s, waiting_s=waiting, working_s=work,
                               class_time_sum_s=prof.class_time_sum_s)
            print(f"[trial] {label}: {record.wall_s:.3f} s, {record.collective_time_s:.3f} s in collectives",
                  file=progress, flush=True)
            if settings.check.active:
                try:
                    values = settings.check.values(settings.check.text(res.stdout or ""))
                except output_check.CompareCommandFailed as exc:
                    result.status, result.exit_status = RUN_FAILED, 1
                    result.message = f"after {label}: {exc}"
                    return result
                defaults_checked += variant == DEFAULT
                if reference is None:
                    if not values:
                        raise UserError(f"the output check found no values in the first default run's output "
                                        f"({settings.check.describe()}); correct --compare-regex or "
                                        "--compare-command")
                    reference = values
                    result.reference_values = len(values)
                else:
                    diff = settings.check.difference(reference, values)
                    if diff is not None:
                        hint = ""
                        if variant == DEFAULT:
                            hint = ("; the default runs differ among themselves, so the check compares values "
                                    "that change from run to run (times?): narrow --compare-regex or give "
                                    "--compare-rtol")
                        elif defaults_checked == 1:
                            hint = ("; only one default run so far, so values that change from run to run "
                                    "(times?) would look the same: if the output has such, narrow --compare-regex")
                        result.status, result.exit_status = OUTPUT_CHANGED, 1
                        result.message = f"{label}: {diff}{hint}"
                        result.runs.append(record)
                        return result
            result.runs.append(record)
            if settings.campaign is not None and result.prediction is None and variant == DEFAULT:
                result.prediction = _predict(settings, predict_fn, prof)
    except (watch.TimedOut, KeyboardInterrupt) as exc:
        result.status, result.message = _stopped(where, variant, exc)
        result.exit_status = 2
        return result
    result.comparisons = [
        compare("wall time", result.measured(DEFAULT, "wall_s"), result.measured(CHOICE, "wall_s")),
        compare("time in collectives", result.measured(DEFAULT, "collective_time_s"),
                result.measured(CHOICE, "collective_time_s")),
    ]
    if dumps is not None:
        result.autotuner_changed = _autotuner_changed(dumps, result.runs)
    return result


# ------------------------------------------------------------------ report
def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _ci(ci, why: str = "under 6 runs") -> str:
    return f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else f"- ({why})"


def report(settings: TrialSettings, result: TrialResult, width: int | None = None) -> str:
    """The runs' medians per measure and variant, the verdicts, the prediction beside
    the measurement, the output check: in `width` columns (the terminal's, else 100)."""
    width = width or terminal_width()
    lines = textwrap.wrap(f"choice: {settings.choice.describe}; {settings.runs} runs per variant"
                          + (f" after {settings.warmup} warm-up run(s) each" if settings.warmup else "")
                          + f"; program: {shlex.join(settings.command)}", width, subsequent_indent="  ")
    if result.comparisons:
        rows = []
        for c in result.comparisons:
            rows.append([c.measure, "default", _s(c.default_median), _ci(c.default_ci), "", "", ""])
            rows.append(["", "choice", _s(c.choice_median), _ci(c.choice_ci), _s(c.ratio), f"{c.p:.3g}", c.verdict])
        lines.append(render(["measure (s)", "variant", "median", "95% interval", "ratio", "p (M-W U)", "verdict"],
                            rows, right={2, 4, 5}, width=width))
    pred = result.prediction
    if pred is not None and result.comparisons:
        wall, coll = result.comparisons
        why = "a point under 6 iterations"
        # a prediction is of the classes' busiest ranks summed: measured alike
        sums = {v: _median(result.measured(v, "class_time_sum_s")) for v in (DEFAULT, CHOICE)}
        rows = [["time in collectives", "default", _s(pred.default_total_s), _ci(pred.default_total_ci, why),
                 _s(sums[DEFAULT] if sums[DEFAULT] is not None else coll.default_median)],
                ["", "choice", _s(pred.rules_total_s), _ci(pred.rules_total_ci, why),
                 _s(sums[CHOICE] if sums[CHOICE] is not None else coll.choice_median)],
                ["wall time change", "choice - default", _s(pred.wall_change_s), "",
                 _s(wall.choice_median - wall.default_median)]]
        lines += textwrap.wrap(f"prediction from the campaign ({settings.campaign}; {_s(pred.uncovered_s)} s of "
                               "the profile's collective time not covered by it) beside the measurement; time in collectives is "
                               "summed over the call classes, each at its busiest rank, on both sides:", width)
        if pred.waiting_total_s > 0 or any(x.waiting_s is not None for x in pred.classes):
            rows += _split_rows(pred, result)
        lines.append(render(["seconds", "variant", "predicted", "95% interval", "measured median"], rows,
                            right={2, 4}, width=width))
    if settings.check.active:
        state = "unchanged" if result.status == COMPLETE else "CHANGED" if result.status == OUTPUT_CHANGED \
            else "checked until the failure"
        n = result.reference_values
        lines += textwrap.wrap(f"output: {state} ({n} value{'' if n == 1 else 's'}: {settings.check.describe()})",
                               width, subsequent_indent="  ")
    else:
        lines.append("output: not checked (give --compare-regex or --compare-command)")
    if settings.choice.kind == choices.LIBRARY_AUTOTUNER and result.comparisons:
        lines += textwrap.wrap(_autotuner_line(settings, result), width, subsequent_indent="  ")
    verdict = result.comparisons[0].verdict if result.status == COMPLETE else result.status
    lines += textwrap.wrap(f"verdict: {verdict}" + (f" ({result.message})" if result.message else ""), width,
                           subsequent_indent="  ")
    return "\n".join(lines)


def _autotuner_line(settings: TrialSettings, result: TrialResult) -> str:
    """Whether the library's autotuner did anything: a tie between runs it did not
    change is not a tie between two tunings."""
    n = len(result.measured(CHOICE, "wall_s"))
    if result.autotuner_changed is None:
        return "autotuner: the library wrote no tuning state to compare; whether its autotuner ran is not known"
    if result.autotuner_changed == 0:
        return (f"autotuner: it changed nothing (each of the {n} choice runs dumped the tuning state the default "
                "runs did): it did not tune here, and the comparison is of the same tuning, not a tie of two")
    return f"autotuner: it changed the library's tuning state in {result.autotuner_changed} of {n} choice runs"


def _median(xs: list[float | None]) -> float | None:
    vals = sorted(x for x in xs if x is not None)
    if not vals:
        return None
    n = len(vals)
    return vals[n // 2] if n % 2 else 0.5 * (vals[n // 2 - 1] + vals[n // 2])


def _split_rows(pred: Prediction, result: TrialResult) -> list[list[str]]:
    """Waiting and working, predicted (the profile's waiting, the campaign's working)
    beside the runs' medians (each run's profile's split; classes with a split only)."""
    rows = []
    for variant in (DEFAULT, CHOICE):
        waits = _median(result.measured(variant, "waiting_s"))
        works = _median(result.measured(variant, "working_s"))
        rows.append(["  waiting", variant, _s(pred.waiting_total_s), "(profiled, unchanged)", _s(waits)])
        rows.append(["  working", variant, _s(pred.working_total_s("default" if variant == DEFAULT else "rules")),
                     "", _s(works)])
    return rows


def to_json(settings: TrialSettings, result: TrialResult) -> dict:
    return {
        "format": FORMAT, "version": VERSION,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": list(settings.command), "cwd": os.getcwd(), "mpi": settings.mpi,
        "choice": settings.choice.to_json(), "runs_per_variant": settings.runs, "warmup": settings.warmup,
        "timeout_s": settings.timeout,
        "status": result.status, "exit_status": result.exit_status, "message": result.message,
        "output_check": settings.check.describe() if settings.check.active else None,
        "runs": [r.to_json() for r in result.runs],
        "comparisons": [c.to_json() for c in result.comparisons],
        "prediction": None if result.prediction is None else result.prediction.to_json(),
        # the profile predicted from: --profile, or the one the campaign's spec was written
        # from; null with a prediction: the first default run's
        "prediction_profile": None if settings.profile is None else str(settings.profile),
        "autotuner_changed_runs": result.autotuner_changed,
    }


# ------------------------------------------------------------------ command line
def _launcher(launch: list[str]) -> tuple[str, ...]:
    command = list(launch or [])
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UserError("nothing to run: give the launcher command after `--`, "
                        "e.g. collkit trial --runs 10 --rules app.rules -- mpirun -n 4 ./app")
    if shutil.which(command[0]) is None:
        raise UserError(f"launcher '{command[0]}' not found; give its full path after `--`")
    return tuple(command)


def settings_from(ns: argparse.Namespace) -> TrialSettings:
    """Every option checked before any run starts."""
    if not MIN_RUNS <= ns.runs <= MAX_RUNS:
        raise UserError(f"--runs {ns.runs}: give {MIN_RUNS} to {MAX_RUNS} runs per variant "
                        f"(below {MIN_RUNS}, no difference can reach significance at 5 %)")
    if not 0 <= ns.warmup <= MAX_WARMUP:
        raise UserError(f"--warmup {ns.warmup}: give 0 to {MAX_WARMUP} warm-up runs per variant")
    command = _launcher(ns.launch)
    mpi = ns.mpi or known.default_name()
    known.find(mpi)
    check = output_check.from_options(ns.compare_regex, ns.compare_command, ns.compare_rtol,
                                      ns.compare_unordered)
    from collkit.apply.preload import autotune_from
    choice = choices.from_options(mpi, ns.rules, ns.algorithm, autotune_from(ns),
                                  getattr(ns, "library_autotuner", False))
    campaign = profile = None
    if ns.profile is not None and ns.campaign is None:
        raise UserError("--profile is the profile the prediction uses; give --campaign DIR too")
    waiting_from = tuple(Path(p) for p in getattr(ns, "waiting_from", []) or [])
    if waiting_from and ns.campaign is None:
        raise UserError("--waiting-from gives the prediction other profiles' waiting; give --campaign DIR too")
    for p in waiting_from:
        profile_file.load(p, need_complete=True)
    if ns.campaign is not None:
        if choice.kind == choices.LIBRARY_AUTOTUNER:
            raise UserError("--campaign predicts collkit rules and forced algorithms; the library's autotuner "
                            "chooses inside the library: leave out --campaign")
        if choice.kind == choices.AUTOTUNE:
            raise UserError("--campaign predicts a choice known before the run; the autotuner's is known after "
                            "it: predict its rules with `collkit trial --rules FILE --campaign DIR`")
        if choice.kind == choices.TUNING_FILE:
            raise UserError("--campaign predicts collkit rules and forced algorithms; a library's tuning "
                            "file is measured by the campaign itself (`tuned:FILE`, docs/tuning-files.md): "
                            "leave out --campaign")
        campaign = Path(ns.campaign)
        if not campaign.is_dir():
            raise UserError(f"--campaign {ns.campaign}: not a directory; give a campaign written by "
                            "`collkit run`")
        if ns.profile is not None:
            profile = Path(ns.profile)
        else:       # the profile `spec --from-profile` wrote the campaign's spec from, where it did
            from collkit.program.spec_from_profile import written_from
            profile = written_from(campaign)
        if profile is not None:
            profile_file.load(profile, need_complete=True)
    return TrialSettings(mpi=mpi, command=command, choice=choice, runs=ns.runs, warmup=ns.warmup,
                         check=check, campaign=campaign, profile=profile, timeout=ns.timeout,
                         synchronised=getattr(ns, "synchronised", False), waiting_from=waiting_from)


def run(ns: argparse.Namespace) -> int:
    settings = settings_from(ns)
    if ns.json is not None:
        out = Path(ns.json)
        if not out.parent.is_dir():
            raise UserError(f"--json {ns.json}: the folder {out.parent} does not exist; create it or "
                            "give another path")
    from collkit.program.profile import run_profiled
    predict_fn = None
    if settings.campaign is not None:
        from collkit.program.predict import predict_profile as predict_fn
    with watch.interrupts():     # SIGINT and SIGTERM stop the run's every process (run_profiled)
        result = execute(settings, run_profiled, predict_fn)
    if ns.json is not None:
        atomic.write_json(Path(ns.json), to_json(settings, result))
    if result.status in (TIMED_OUT, INTERRUPTED):
        raise UserError(result.message)
    print(report(settings, result))
    if result.status == RUN_FAILED:
        print(f"collkit trial: {result.message}", file=sys.stderr)
    return result.exit_status


DESCRIPTION = f"""\
Run the program itself with and without a choice of algorithms, alternating (ABBA
blocks), and tell with significance whether the choice makes it faster: per variant the
wall time and the time in collectives (from libcollkit-preload's counters), their medians
with 95 % intervals, a Mann-Whitney test at 5 % and the ratio of medians. The choice is
forced algorithms, a collkit rules file, the MPI's own tuning file (an Open MPI rules
file or an MPICH JSON selection file, read by the library), or the autotuner (every
choice run explores and writes its rules to --autotune-out). --runs is {MIN_RUNS} to
{MAX_RUNS} per variant ({MIN_RUNS}: the fewest at which the test can call a difference)."""

EPILOG = """\
examples:
  collkit trial --runs 10 --rules app.rules --compare-regex 'residual = (\\S+)' --compare-rtol 1e-12 \\
      -- mpirun -n 4 ./app
  collkit trial --runs 8 --algorithm allreduce=ring --campaign app-campaign -- mpirun -n 4 ./app
  collkit trial --runs 10 --mpi mpich --rules tuned.json --compare-command 'cat out.txt' -- mpiexec -n 4 ./app
Exit status: 0 when every run finished with its output unchanged (whatever the verdict),
1 when the output changed, a failed run's own status when one failed, 2 on bad options,
a run past --timeout, or Ctrl-C (SIGINT) or SIGTERM (each stops every process of the run).
See docs/application-loop.md."""


def add_parser(sub) -> None:
    p = sub.add_parser("trial", help="the program itself with and without a choice of algorithms, with "
                                     "significance", description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, required=True, metavar="N", help="measured runs per variant")
    p.add_argument("--warmup", type=int, default=1, metavar="K",
                   help="runs per variant before the measured ones, not counted (default 1)")
    p.add_argument("--mpi", metavar="NAME", help="the MPI the program runs on (collkit mpis)")
    p.add_argument("--rules", metavar="FILE",
                   help="a collkit rules file, or an Open MPI rules / MPICH JSON tuning file for --mpi")
    p.add_argument("--algorithm", action="append", metavar="C=NAME",
                   help="force algorithm NAME for collective C (repeatable)")
    p.add_argument("--library-autotuner", action="store_true",
                   help="the choice is the library's own autotuner (Intel MPI: I_MPI_TUNING_MODE=auto); "
                        "the trial also says whether it changed the library's tuning")
    from collkit.apply.preload import add_autotune_arguments
    add_autotune_arguments(p)
    p.add_argument("--compare-regex", metavar="RE",
                   help="compare every match (group 1 if it has one) of the output across all runs")
    p.add_argument("--compare-command", metavar="CMD",
                   help="run CMD after each run and compare its output (for results written to files)")
    p.add_argument("--compare-rtol", type=float, metavar="X",
                   help="compare numbers within relative tolerance X instead of as text")
    p.add_argument("--compare-unordered", action="store_true",
                   help="compare the values in any order (lines printed by several ranks interleave "
                        "differently from run to run)")
    p.add_argument("--campaign", metavar="DIR", help="show the prediction from this campaign beside the runs")
    p.add_argument("--profile", metavar="FILE",
                   help="the profile the prediction uses (default: the one the campaign's spec was written "
                        "from by `collkit spec --from-profile`, else the first default run's)")
    p.add_argument("--synchronised", action="store_true",
                   help="predict working times from synchronised calls (collkit predict --synchronised)")
    p.add_argument("--waiting-from", metavar="FILE", action="append", default=[],
                   help="another profile of the program for the prediction's waiting (repeatable; collkit "
                        "predict --waiting-from)")
    p.add_argument("--json", metavar="FILE", help="write every run's numbers and the verdicts as JSON")
    p.add_argument("--timeout", type=argtypes.timeout(), metavar="S",
                   help="stop a run, every process it started, and the trial after S seconds of that run "
                        "(default: no limit)")
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="-- LAUNCHER ...",
                   help="the launcher, its arguments, the program and its arguments")
    p.set_defaults(func=run)
