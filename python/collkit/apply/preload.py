"""``collkit preload``: run an MPI program with libcollkit-preload.so set for
its MPI, the algorithms it forces and the rules file it reads.

The shim itself checks everything again at MPI_Init (it may be used without
this command); checking here first turns a typo into a one-line error before
any rank starts."""

from __future__ import annotations

import argparse
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean
from collkit.library import registry
from collkit.mpis import known

LIBRARY_NAME = "libcollkit-preload.so"


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

    def environment(self) -> dict[str, str]:
        env = {"LD_PRELOAD": str(self.library)}
        if self.algorithms:
            env["COLLKIT_ALGORITHMS"] = ",".join(f"{c}={a}" for c, a in self.algorithms)
        if self.rules is not None:
            env["COLLKIT_RULES"] = str(self.rules)
        if self.report is not None:
            env["COLLKIT_REPORT"] = self.report
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
                           rules=rules, report=report)


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
    # Not "command": the top-level parser keeps the subcommand's name there.
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="-- LAUNCHER ...",
                   help="the launcher, its arguments, the program and its arguments")
    p.set_defaults(func=run)
