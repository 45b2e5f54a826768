"""``collkit profile``: run an unmodified MPI program under libcollkit-preload
with COLLKIT_PROFILE set, and merge what its ranks wrote into one profile
(profile_file.py). ``run_profiled`` is the same run for other commands
(`collkit trial` profiles each of its runs with it).

The launcher runs in a session of its own under launch/watch.py's watchdog:
at --timeout, or when SIGINT or SIGTERM reaches collkit, every process it
started is stopped (its ranks too, in whatever group they put themselves)
before collkit says so in one line and exits with status 2."""

from __future__ import annotations

import argparse
import datetime as _dt
import filecmp
import math
import os
import shutil
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from collkit import __version__
from collkit.apply.preload import PreloadSettings, env_flags, library_path
from collkit.common import argtypes
from collkit.common.errors import UserError
from collkit.common.table import render_sections, terminal_width
from collkit.launch import watch
from collkit.mpis import known
from collkit.program import arrivals, autotune_file, profile_file, rank_files
from collkit.program.profile_file import CallClass, ClassSplit, Profile

DEFAULT_OUT = "collkit-profile.json"
DEFAULT_TRACE = 100_000  # calls per rank for a bare --trace: 2.4 MB per rank
TRACE_MAX = 10_000_000   # the preload's bound (preload/profile.h CKP_TRACE_MAX)


@dataclass(frozen=True)
class RunResult:
    profile: Profile
    exit_status: int
    wall_s: float
    stdout: str


def _scratch() -> Path:
    """Where the ranks write: a hidden folder in the current directory, which
    on a cluster is on the filesystem every node shares (a node's /tmp is
    not); the system's temporary folder where the current one is read-only."""
    cwd = Path.cwd()
    base = cwd if os.access(cwd, os.W_OK | os.X_OK) else Path(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix=".collkit-profile-", dir=base))


def _status(returncode: int) -> tuple[int, str]:
    """The exit status as a shell reports it, and why it is a failure ('' if not)."""
    if returncode == 0:
        return 0, ""
    return (128 - returncode if returncode < 0 else returncode,
            f"the launcher {'was ' if returncode < 0 else ''}{watch.exit_reason(returncode)}")


def _ranks_text(ranks: list[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8])
    return shown + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _merge(found: rank_files.Found, *, mpi: known.KnownMPI, command: list[str], exit_status: int,
           failure: str, wall_s: float, trace: int) -> Profile:
    size = found.size
    reasons = [failure] if failure else []
    missing = [r for r in range(size) if r not in found.finals]
    if missing:
        reasons.append(f"rank{'s' if len(missing) > 1 else ''} {_ranks_text(missing)} of {size} wrote no "
                       "profile at MPI_Finalize")
    reasons += found.problems
    classes, tr = rank_files.merge(found.finals, trace)
    classes, clock = arrivals.split_classes(found.finals, classes, size)
    everyone = [*found.starts.values(), *found.finals.values()]
    hosts = sorted({f.host for f in everyone})
    first = found.finals.get(0) or found.starts.get(0) or everyone[0]
    return Profile(
        complete=not reasons, exit_status=exit_status, incomplete_reason="; ".join(reasons),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        collkit_version=__version__, command=tuple(command), cwd=os.getcwd(),
        mpi_name=mpi.name, mpi_family=mpi.family, mpi_library_version=first.library_version or mpi.library_version,
        ranks=size, ranks_reported=len(found.finals), nodes=len(hosts), hosts=tuple(hosts), wall_s=wall_s,
        mpi_span_s=max((f.span_s for f in found.finals.values()), default=0.0), classes=classes, trace=tr,
        unclassified_calls=max((f.unclassified_calls for f in found.finals.values()), default=0),
        unclassified_time_max_s=max((f.unclassified_s for f in found.finals.values()), default=0.0),
        busiest_rank_s=max((math.fsum(c.time_s for c in f.classes) + f.unclassified_s
                            for f in found.finals.values()), default=0.0),
        run_id=next(iter(found.run_ids)) if len(found.run_ids) == 1 else None, clock=clock,
        # every rank holds the same agreed decisions: the lowest rank's stand for all
        autotune=next((f.autotune for _, f in sorted(found.finals.items()) if f.autotune is not None), None))


def run_profiled(mpi: str, command: list[str], *, algorithms: tuple[tuple[str, str], ...] = (),
                 rules: Path | None = None, extra_env: dict[str, str] | None = None, trace: int = 0,
                 stdout=None, stderr=None, timeout: float | None = None) -> RunResult:
    """Run `command` (a launcher and its arguments) once with the preload of
    MPI `mpi` profiling, forcing `algorithms` or reading `rules` if given.
    extra_env goes into the launcher's environment and to every rank (as the
    preload's own variables do); its output goes to `stdout` and `stderr`
    (the caller's by default; subprocess.PIPE collects stdout in the result).
    The profile is incomplete when the launcher fails or is killed, or a rank
    wrote no final file; a launcher that is not there, or a run in which no
    rank reached MPI_Init, is a UserError. At `timeout` seconds the launch is
    stopped with everything it started (watch.TimedOut), and so it is when an
    exception (an interrupt, watch.Interrupted) arrives while it runs."""
    if not command:
        raise UserError("nothing to run: give the launcher command after `--`, "
                        "e.g. collkit profile -- mpirun -n 4 ./app")
    if not 0 <= trace <= TRACE_MAX:
        raise UserError(f"--trace {trace}: give a number of calls per rank from 1 to {TRACE_MAX}")
    k = known.find(mpi)
    env = k.install().environment()  # run-as-root consent, MPICH's progress throttle
    env.update(extra_env or {})
    folder = _scratch()
    try:
        settings = PreloadSettings(mpi=mpi, library=library_path(mpi), algorithms=tuple(algorithms),
                                   rules=Path(rules).resolve() if rules is not None else None,
                                   profile_dir=folder, profile_trace=trace)
        variables = {**settings.environment(), **(extra_env or {})}
        argv = [command[0], *env_flags(k.family, variables), *command[1:]]
        t0 = time.perf_counter()
        try:
            done = watch.run_watched(argv, env, timeout, stdout=stdout, stderr=stderr)
        except (FileNotFoundError, PermissionError, NotADirectoryError):
            raise UserError(f"launcher '{command[0]}' not found or not executable; give its full path "
                            "after `--`") from None
        wall_s = time.perf_counter() - t0
        exit_status, failure = _status(done.code)
        found = rank_files.collect(folder)
        rank_files.require_one_run(found, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not found.any:
        if exit_status == 0:
            version = k.library_version.splitlines()[0] if k.library_version else mpi
            raise UserError(f"`{' '.join(command)}` ran, but no rank reached MPI_Init under the preload: is it an "
                            f"MPI program linked against {mpi} ({version})?")
        raise UserError(f"{failure} before any rank got past MPI_Init; run `{' '.join(command)}` alone to see why")
    profile = _merge(found, mpi=k, command=command, exit_status=exit_status, failure=failure, wall_s=wall_s,
                     trace=trace)
    return RunResult(profile=profile, exit_status=exit_status, wall_s=wall_s, stdout=done.stdout)


def resolve_mpi(name: str | None, command: list[str]) -> str:
    """The MPI to profile under: --mpi, else the known MPI whose launcher the
    command starts with (the same file once links are followed,
    or a copy of it in the same folder), else the
    only known MPI. The launcher is the best evidence of the program's MPI collkit
    has without reading the program, and a preload for another MPI's ABI
    would not load or would crash."""
    if name:
        known.find(name)
        return name
    if not command:
        raise UserError("nothing to run: give the launcher command after `--`, "
                        "e.g. collkit profile -- mpirun -n 4 ./app")
    usable = {n: k for n, k in known.known().items() if k.build is not None}
    launcher = shutil.which(command[0])
    if launcher is None:
        raise UserError(f"launcher '{command[0]}' not found; give its full path after `--`")
    real = Path(os.path.realpath(launcher))
    with_launcher = {n: Path(os.path.realpath(k.mpirun)) for n, k in usable.items() if k.mpirun}
    # MPICH installs mpirun, mpiexec and mpiexec.hydra as copies of one file.
    same = [n for n, p in with_launcher.items()
            if p == real or (p.parent == real.parent and p.is_file() and filecmp.cmp(p, real, shallow=False))]
    if len(same) == 1:
        return same[0]
    if len(usable) == 1:
        return next(iter(usable))
    have = ", ".join(sorted(usable)) or "none"
    raise UserError(f"which MPI does `{command[0]}` launch? give --mpi NAME (known: {have}; `collkit mpis`)")


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _short(mpi_name: str | None) -> str:
    """MPI_DOUBLE -> double, MPI_SUM -> sum: the columns stay narrow."""
    if not mpi_name:
        return "-"
    return mpi_name[4:].lower() if mpi_name.startswith("MPI_") else mpi_name


def _by_comm(p: Profile) -> list[tuple[str, list[CallClass]]]:
    """One section per communicator (its name and size head it), the busiest first."""
    by_comm: dict[tuple[str, int], list] = {}
    for c in p.classes:
        by_comm.setdefault((c.comm, c.comm_size), []).append(c)
    return [(f"communicator {comm} ({size} rank{'s' if size != 1 else ''})", members)
            for (comm, size), members in sorted(by_comm.items(), key=lambda kv: -sum(c.time_max_s for c in kv[1]))]


def _late(split: ClassSplit) -> str:
    """The rank(s) (of the class's communicator) most often last to arrive, with that share."""
    top = max(r.last_share for r in split.ranks)
    if len(split.ranks) < 2 or top <= 0:
        return "-"
    late = sorted({r.rank for r in split.ranks if r.last_share >= top - 1e-9})
    shown = ",".join(map(str, late[:3])) + (f"+{len(late) - 3}" if len(late) > 3 else "")
    return f"{shown} ({100 * top:.0f}%)"


def _split_table(p: Profile, width: int) -> list[str]:
    """Per class its busiest rank's waiting and working (docs/application-loop.md,
    "Waiting and working"), the late ranks, and the totals; why a class has no split."""
    head = ["collective", "bytes", "from", "matched", "waiting s", "working s", "% wait", "late rank (share)"]
    sections, why = {}, []
    for title, members in _by_comm(p):
        rows = []
        for c in members:
            s = c.split
            if s is None:
                rows.append([c.collective, _fmt_bytes(c.bytes), "-", "0", "-", "-", "-", "-"])
                if p.clock is not None:
                    why.append(f"{c.collective} {_fmt_bytes(c.bytes)} on {c.comm}: {c.split_reason}")
                continue
            total = s.waiting_s + s.working_s
            rows.append([c.collective, _fmt_bytes(c.bytes), "trace" if s.source == "trace" else f"1/{s.stride}",
                         str(s.matched_calls), f"{s.waiting_s:.6f}", f"{s.working_s:.6f}",
                         f"{100 * s.waiting_s / total:.1f}" if total > 0 else "-", _late(s)])
        sections[title] = rows
    lines = ["", "waiting and working at each class's busiest rank (from: the trace, or every Nth call sampled)",
             render_sections(head, sections, right={1, 3, 4, 5, 6}, width=width), ""]
    split = [c.split for c in p.classes if c.split is not None]
    prose = []
    if p.clock is None:
        first = next((c.split_reason for c in p.classes if c.split_reason), "")
        prose.append(f"no class is split into waiting and working: {first or 'the profile has no clock data'}; "
                     "profile again with this collkit")
    else:
        waiting, working = sum(s.waiting_s for s in split), sum(s.working_s for s in split)
        share = f" ({100 * waiting / (waiting + working):.1f} % waiting)" if waiting + working > 0 else ""
        prose.append(f"in total {waiting:.6f} s waiting and {working:.6f} s working at the classes' busiest "
                     f"ranks{share}; clocks: {', '.join(p.clock.methods)} on {p.clock.nodes} "
                     f"node{'s' if p.clock.nodes != 1 else ''}, error bound {p.clock.error_bound_s * 1e6:.3g} us")
        lost = sum(s.unmatched_calls for s in split)
        if lost:
            prose.append(f"{lost} kept calls of split classes were not matched across their ranks "
                         "(left out of the split)")
        prose += [f"not split: {w}" for w in why]
    for text in prose:
        lines += textwrap.wrap(text, width)
    return lines


def table(p: Profile, width: int | None = None) -> str:
    """The classes by time, then the totals, then the waiting and working;
    fits `width` (the terminal's, else 100 columns)."""
    width = width or terminal_width()
    head = ["collective", "bytes", "datatype", "op", "root", "in place", "calls", "time max s", "% wall"]
    sections = {title: [[c.collective, _fmt_bytes(c.bytes), _short(c.datatype), _short(c.op),
                         "-" if c.root is None else str(c.root), "yes" if c.in_place else "no", str(c.calls),
                         f"{c.time_max_s:.6f}", f"{100 * c.share(p.wall_s):.2f}"] for c in members]
                for title, members in _by_comm(p)}
    lines = [render_sections(head, sections, right={1, 4, 6, 7, 8}, width=width)]
    total = p.collective_time_s
    sums = p.class_time_sum_s
    prose = [f"{p.ranks} ranks on {p.nodes} node{'s' if p.nodes != 1 else ''}, {p.mpi_name} "
             f"({p.mpi_library_version.splitlines()[0] if p.mpi_library_version else '?'})",
             f"wall time {p.wall_s:.3f} s, MPI_Init..MPI_Finalize {p.mpi_span_s:.3f} s, in collectives "
             f"{total:.6f} s on the busiest rank ({100 * total / p.wall_s if p.wall_s > 0 else 0:.2f} % of wall); "
             f"the classes' busiest ranks add up to {sums:.6f} s"]
    if p.unclassified_calls:
        prose.append(f"unclassified calls: {p.unclassified_calls} ({p.unclassified_time_max_s:.6f} s), "
                     "see docs/application-loop.md")
    if p.trace is not None:
        dropped = sum(r.dropped for r in p.trace.ranks)
        prose.append(f"trace: the first {p.trace.max_calls_per_rank} calls per rank kept"
                     + (f", {dropped} later calls dropped" if dropped else ", none dropped"))
    lines.append("")
    for text in prose:
        lines += textwrap.wrap(text, width)
    lines += _split_table(p, width)
    if p.autotune is not None:
        lines += autotune_file.table(p.autotune, width)
    return "\n".join(lines)


def run(ns: argparse.Namespace) -> int:
    command = list(ns.launch or [])
    if command and command[0] == "--":
        command = command[1:]
    mpi = resolve_mpi(ns.mpi, command)
    trace = 0 if ns.trace is None else ns.trace
    if ns.trace is not None and not 1 <= trace <= TRACE_MAX:
        raise UserError(f"--trace {trace}: give a number of calls per rank from 1 to {TRACE_MAX}")
    out = Path(ns.out)
    if not out.parent.is_dir():
        raise UserError(f"--out {ns.out}: the folder {out.parent} does not exist; create it or write elsewhere")
    from collkit.apply.preload import autotune_from
    tune = autotune_from(ns)
    with watch.interrupts():
        try:
            result = run_profiled(mpi, command, trace=trace, timeout=ns.timeout,
                                  extra_env=tune.environment() if tune is not None else None)
        except watch.TimedOut as e:
            raise UserError(f"the program ran past --timeout {e.seconds:g} s and was stopped with every process "
                            "it started; no profile written. Give a longer --timeout, or find where it hangs "
                            "(run it alone)") from None
        except watch.Interrupted as e:
            raise UserError(f"{e.name} arrived: the program was stopped with every process it started; no "
                            "profile written. Run it again to profile it (with --timeout S to bound a run that "
                            "may hang)") from None
    profile_file.dump(result.profile, out)
    print(table(result.profile))
    p = result.profile
    state = "" if p.complete else f" (INCOMPLETE: {p.incomplete_reason})"
    print(f"profile written to {out}{state}", file=sys.stderr if not p.complete else sys.stdout)
    return min(result.exit_status, 255)


DESCRIPTION = """\
Run an unmodified MPI program (C or Fortran) under libcollkit-preload in profiling mode
and write, per class of collective call (collective, communicator, bytes, datatype, op,
root, in place), the number of calls and the time inside the library: the busiest
rank's and the sum over ranks; and each class's time split into waiting (for the
ranks that arrived later) and working, with the ranks most often late. The calls
still run as they would (the library's own collectives), so the profile is the
program's."""

EPILOG = """\
examples:
  collkit profile -- mpirun -n 4 ./app
  collkit profile --mpi mpich --trace --out app.json -- /path/to/mpich/bin/mpirun -n 8 ./app
  collkit profile --autotune --autotune-out app.rules -- mpirun -n 4 ./app
--mpi may be left out when the launcher is a known MPI's (or only one MPI is known).
A program that fails still leaves a profile, marked incomplete, and collkit exits
with the program's status. At --timeout, or on Ctrl-C (SIGINT) or SIGTERM, every
process of the program is stopped, no profile is written, and collkit exits with
status 2. Format: docs/application-loop.md."""


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="where an MPI program's time in collectives goes, per call class",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpi", metavar="NAME", help="the MPI the program runs on (collkit mpis)")
    p.add_argument("--out", metavar="FILE", default=DEFAULT_OUT, help=f"the profile (default {DEFAULT_OUT})")
    p.add_argument("--trace", nargs="?", type=int, const=DEFAULT_TRACE, metavar="N",
                   help=f"also keep the first N calls of each rank in order, with their times "
                        f"(default N {DEFAULT_TRACE}, 24 bytes a call; for `collkit replay`)")
    p.add_argument("--timeout", type=argtypes.timeout(), metavar="S",
                   help="stop the program, every process it started, after S seconds (default: no limit)")
    from collkit.apply.preload import add_autotune_arguments
    add_autotune_arguments(p)       # profile a run that autotunes: the profile shows what it decided
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="-- LAUNCHER ...",
                   help="the launcher, its arguments, the program and its arguments")
    p.set_defaults(func=run)
