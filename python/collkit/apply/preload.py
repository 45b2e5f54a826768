"""``collkit preload``: run an MPI program with libcollkit-preload.so set for
its MPI, the algorithms it forces and the rules file it reads.

The shim itself checks everything again at MPI_Init (it may be used without
this command); checking here first turns a typo into a one-line error before
any rank starts."""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean
from collkit.library import registry
from collkit.apply import autotune_settings
from collkit.mpis import known

LIBRARY_NAME = "libcollkit-preload.so"


@dataclass(frozen=True)
class Autotune:
    """The autotuner's settings (docs/preload.md, "Autotune"), checked here as
    the shim checks them again at MPI_Init (preload/autotune_config.c)."""

    out: Path
    budget_pct: float             # defaults and bounds: autotune_settings.py (the shim's header)
    calls: int
    after: int
    alpha: float
    candidates: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (collective, names)
    start_from: Path | None = None

    def environment(self) -> dict[str, str]:
        env = {"COLLKIT_AUTOTUNE": "1", "COLLKIT_AUTOTUNE_OUT": str(self.out),
               "COLLKIT_AUTOTUNE_BUDGET": repr(self.budget_pct), "COLLKIT_AUTOTUNE_CALLS": str(self.calls),
               "COLLKIT_AUTOTUNE_AFTER": str(self.after),
               "COLLKIT_AUTOTUNE_ALPHA": repr(self.alpha)}
        if self.candidates:
            env["COLLKIT_AUTOTUNE_CANDIDATES"] = ";".join(f"{c}={','.join(names)}" for c, names in self.candidates)
        if self.start_from is not None:
            env["COLLKIT_AUTOTUNE_FROM"] = str(self.start_from)
        return env



def parse_candidates(text: str) -> tuple[str, tuple[str, ...]]:
    """``C=NAME,NAME,...`` checked against the registry (``library`` allowed)."""
    coll, sep, names = text.partition("=")
    if not sep or not coll or not names:
        raise UserError(f"--candidates '{text}': expected COLLECTIVE=NAME,..., e.g. allreduce=ring,rabenseifner")
    coll = registry.check_collective(coll)
    known_names = [a.name for a in registry.load() if a.collective == coll]
    out = []
    for name in names.split(","):
        if name in ("*", "library:*") or re.fullmatch(r"library:[a-z0-9_]+", name):
            out.append(name)    # the library's own algorithm: the shim checks it against the MPI at MPI_Init
            continue
        if name != "library" and name not in known_names:
            raise UserError(f"--candidates '{text}': unknown {coll} algorithm '{name}'"
                            f"{did_you_mean(name, known_names)}; see `collkit algorithms --collective {coll}`")
        out.append(name)
    return coll, tuple(out)


def _number(option: str, text: str, low: float, high: float, what: str, whole: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or not (low < v <= high if not whole else low <= v <= high) or (whole and v != int(v)):
        raise UserError(f"{option} {text}: {what}")
    return v


def autotune_from(ns: argparse.Namespace) -> Autotune | None:
    given = [o for o, v in (("--autotune-out", ns.autotune_out), ("--autotune-from", ns.autotune_from),
                            ("--budget", ns.budget), ("--candidates", ns.candidates),
                            ("--autotune-calls", ns.autotune_calls), ("--autotune-after", ns.autotune_after),
                            ("--autotune-alpha", ns.autotune_alpha))
             if v is not None]
    if not ns.autotune:
        if given:
            raise UserError(f"{given[0]} needs --autotune")
        return None
    if getattr(ns, "rules", None) is not None:
        raise UserError(f"--rules and --autotune together: start the autotuner from the rules with "
                        f"--autotune-from {ns.rules}")
    if getattr(ns, "algorithm", None):
        raise UserError("--algorithm and --autotune together: limit the autotuner with --candidates instead")
    d = autotune_settings.settings()
    out = Path(ns.autotune_out or d.out).resolve()
    if out.is_dir() or not out.parent.is_dir() or not os.access(out.parent, os.W_OK) or \
            (out.exists() and not os.access(out, os.W_OK)):
        raise UserError(f"--autotune-out {ns.autotune_out or out}: cannot write there; give a file in a writable "
                        "directory")
    start = None
    if ns.autotune_from is not None:
        start = Path(ns.autotune_from).resolve()
        if not start.is_file() or not os.access(start, os.R_OK):
            raise UserError(f"--autotune-from {ns.autotune_from}: not a readable file; give a collkit rules file")
    candidates = tuple(parse_candidates(t) for t in ns.candidates or [])
    if len({c for c, _ in candidates}) != len(candidates):
        raise UserError("--candidates names a collective twice; list all of its candidates in one --candidates")
    return Autotune(
        out=out,
        budget_pct=_number("--budget", ns.budget, 0.0, d.budget_pct_max,
                           f"a percentage above 0 and at most {d.budget_pct_max:g}")
        if ns.budget is not None else d.budget_pct,
        calls=int(_number("--autotune-calls", ns.autotune_calls, 1, d.calls_max,
                          f"a whole number of calls from 1 to {d.calls_max}", whole=True))
        if ns.autotune_calls is not None else d.calls,
        after=int(_number("--autotune-after", ns.autotune_after, 0, d.calls_max,
                          f"a whole number of calls from 0 to {d.calls_max}", whole=True))
        if ns.autotune_after is not None else d.after,
        alpha=_number("--autotune-alpha", ns.autotune_alpha, 0.0, d.alpha_max,
                      f"an error rate above 0 and at most {d.alpha_max:g}")
        if ns.autotune_alpha is not None else d.alpha,
        candidates=candidates, start_from=start)


@dataclass(frozen=True)
class PreloadSettings:
    """What the shim is told, as environment variables of every rank."""

    mpi: str
    library: Path
    algorithms: tuple[tuple[str, str], ...] = ()  # (collective, algorithm)
    rules: Path | None = None
    report: str | None = None  # "1" (standard error) or a file path
    profile_dir: Path | None = None  # COLLKIT_PROFILE: where each rank writes its profile
    profile_trace: int = 0  # COLLKIT_PROFILE_TRACE: calls kept in order per rank
    autotune: Autotune | None = None  # COLLKIT_AUTOTUNE*: explore, decide, write rules

    def environment(self) -> dict[str, str]:
        env = {"LD_PRELOAD": str(self.library)}
        if self.algorithms:
            env["COLLKIT_ALGORITHMS"] = ",".join(f"{c}={a}" for c, a in self.algorithms)
        if self.rules is not None:
            env["COLLKIT_RULES"] = str(self.rules)
        if self.report is not None:
            env["COLLKIT_REPORT"] = self.report
        if self.autotune is not None:
            env.update(self.autotune.environment())
        if self.profile_dir is not None:
            env["COLLKIT_PROFILE"] = str(self.profile_dir)
            if self.profile_trace:
                env["COLLKIT_PROFILE_TRACE"] = str(self.profile_trace)
        return env


def library_path(mpi: str) -> Path:
    return known.find(mpi).part("preload")


def parse_algorithm(text: str) -> tuple[str, str]:
    """``C=NAME`` checked against the registry."""
    coll, sep, name = text.partition("=")
    if not sep or not coll or not name:
        raise UserError(f"--algorithm '{text}': expected COLLECTIVE=NAME, e.g. allreduce=ring")
    coll = registry.check_collective(coll)
    names = [a.name for a in registry.load() if a.collective == coll]
    if name not in names:
        raise UserError(f"--algorithm '{text}': unknown {coll} algorithm '{name}'"
                        f"{did_you_mean(name, names)}; see `collkit algorithms --collective {coll}`")
    return coll, name


def settings_from(ns: argparse.Namespace) -> PreloadSettings:
    tune = autotune_from(ns)        # first: its conflicts with --rules/--algorithm say what to use instead
    algorithms = tuple(parse_algorithm(t) for t in ns.algorithm or [])
    seen: set[str] = set()
    for coll, _ in algorithms:
        if coll in seen:
            raise UserError(f"--algorithm names {coll} twice; force one algorithm per collective")
        seen.add(coll)
    rules = None
    if ns.rules is not None:
        rules = Path(ns.rules).resolve()
        if not rules.is_file() or not os.access(rules, os.R_OK):
            raise UserError(f"--rules {ns.rules}: not a readable file; give a collkit rules file "
                            "(format in docs/preload.md)")
    report = None
    if ns.report_file is not None:
        report = str(Path(ns.report_file).resolve())
    elif ns.report:
        report = "1"
    return PreloadSettings(mpi=ns.mpi, library=library_path(ns.mpi), algorithms=algorithms,
                           rules=rules, report=report, autotune=tune)


def env_flags(family: str, env: dict[str, str]) -> list[str]:
    """Launcher flags that give every rank these variables, as the family's launcher
    takes them (`MPIBackend.env_flags`: Open MPI's mpirun forwards only what -x names;
    MPICH's hydra, and its derivatives', takes -genv NAME VALUE)."""
    from collkit.backends import backend_for
    return backend_for(family).env_flags(env)


def launch_command(settings: PreloadSettings, command: list[str]) -> list[str]:
    """The user's launcher command with the variables inserted after the
    launcher's name (its first word)."""
    if not command:
        raise UserError("nothing to run: give the launcher command after `--`, "
                        "e.g. collkit preload --mpi openmpi -- mpirun -n 4 ./app")
    family = known.find(settings.mpi).family
    return [command[0], *env_flags(family, settings.environment()), *command[1:]]


def run(ns: argparse.Namespace) -> int:
    if ns.print_path:
        print(library_path(ns.mpi))
        return 0
    command = list(ns.launch or [])
    if command and command[0] == "--":
        command = command[1:]
    settings = settings_from(ns)
    argv = launch_command(settings, command)
    env = known.find_install(ns.mpi).environment()  # run-as-root consent, MPICH's progress throttle
    try:
        return subprocess.run(argv, env=env).returncode
    except FileNotFoundError:
        raise UserError(f"launcher '{argv[0]}' not found; give its full path after `--`") from None


DESCRIPTION = """\
Run an unmodified MPI program (C or Fortran) on libcollkit's algorithms through
libcollkit-preload.so, the PMPI shim built for each known MPI (`collkit mpis`). With no
--algorithm and no --rules the shim passes every call to the MPI library."""

EPILOG = """\
examples:
  collkit preload --mpi openmpi --algorithm allreduce=rabenseifner --report -- mpirun -n 4 ./app
  collkit preload --mpi mpich --rules tuned.rules -- /path/to/mpich/bin/mpirun -n 8 ./app
  collkit preload --mpi openmpi --autotune --autotune-out app.rules --report -- mpirun -n 16 ./app
  collkit preload --mpi openmpi --rules app.rules -- mpirun -n 16 ./app
  collkit preload --mpi openmpi --print-path
Calls the chosen algorithm cannot do correctly (intercommunicators, derived datatypes
in reductions, non-commutative ops, ...) go to the library, counted in the report.
See docs/preload.md for the rules format and the environment variables."""


def add_parser(sub) -> None:
    p = sub.add_parser("preload", help="run an unmodified MPI program on libcollkit's algorithms",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpi", required=True, metavar="NAME", help="the MPI the program runs on (collkit mpis)")
    p.add_argument("--algorithm", action="append", metavar="C=NAME",
                   help="force algorithm NAME for collective C (repeatable)")
    p.add_argument("--rules", metavar="FILE", help="a collkit rules file (docs/preload.md)")
    p.add_argument("--report", action="store_true",
                   help="rank 0 prints calls, bytes, time and fallbacks at MPI_Finalize (standard error)")
    p.add_argument("--report-file", metavar="FILE", help="write that report to FILE instead")
    p.add_argument("--print-path", action="store_true", help="print the preload library's path and exit")
    add_autotune_arguments(p)
    # Not "command": the top-level parser keeps the subcommand's name there.
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="-- LAUNCHER ...",
                   help="the launcher, its arguments, the program and its arguments")
    p.set_defaults(func=run)


def add_autotune_arguments(p) -> None:
    """The autotuner's options, as `collkit preload` and `collkit trial` take them
    (autotune_from reads them)."""
    d = autotune_settings.settings()
    t = p.add_argument_group("autotune (docs/preload.md, \"Autotune\")")
    t.add_argument("--autotune", action="store_true",
                   help="explore the candidates on the program's own calls, decide per class with a "
                        "significance test, and write the choices as a collkit rules file at MPI_Finalize")
    t.add_argument("--autotune-out", metavar="FILE",
                   help=f"where rank 0 writes the learned rules (default: {d.out} here)")
    t.add_argument("--autotune-from", metavar="FILE",
                   help="start from these rules: the classes they match run their choice, unexplored")
    t.add_argument("--budget", metavar="PCT",
                   help=f"exploration may cost at most PCT %% of a class's working time (default {d.budget_pct:g})")
    t.add_argument("--candidates", action="append", metavar="C=NAME,...",
                   help="only these algorithms of collective C (default: every libcollkit one): libcollkit's "
                        "names or * for all, and library:NAME or library:* for the library's own where it switches them: per "
                        "call (MPICH), per communicator (Open MPI, with OMPI_MCA_coll_tuned_use_dynamic_rules=1); the library's default always is one; repeatable, once per collective")
    t.add_argument("--autotune-calls", metavar="N", help=f"at most N exploration calls a class (default {d.calls})")
    t.add_argument("--autotune-after", metavar="N",
                   help="a class explores from its call after N: one called N times or fewer stays on the "
                        f"library at no cost (default {d.after})")
    t.add_argument("--autotune-alpha", metavar="A",
                   help=f"the chance of eliminating a class's fastest candidate, at most (default {d.alpha:g})")
