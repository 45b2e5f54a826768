"""What the tests need beyond the package, one marker per dependency, each with one
condition (docs/testing.md, "The Python tests").

    @needs.openmpi                       a test that runs Open MPI
    pytest.param("mpich", marks=needs.mpi("mpich"))
    needs.check("slurm")                 inside a fixture or a test

A test whose dependency is missing skips, saying what is missing and the command
that installs it; under `make test` (scripts/test.sh exports
COLLKIT_TESTS_REQUIRE_ALL=1) it is an error instead when `scripts/setup.sh --tests`
installs that dependency here, so a missing one cannot pass unseen. What setup
does not install (a GPU's NCCL; apt packages for a user who is not root) stays a
skip. conftest.py checks the markers before a test's fixtures start.

Each condition is probed once per session, on first use.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ALL = os.environ.get("COLLKIT_TESTS_REQUIRE_ALL") == "1"
SETUP = "make setup-tests (bash scripts/setup.sh --tests)"


def _apt() -> bool:
    """Whether setup.sh installs Debian packages here: it does as root with apt-get."""
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def _x86_64() -> bool:
    """Whether setup.sh installs the MPIs of x86-64 wheels here (scripts/mpis/)."""
    return os.uname().machine == "x86_64"


def _always() -> bool:
    return True


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Dependency:
    what: str                               # what a skip or failure names
    missing: Callable[[], str | None]       # why it is not here, or None
    setup_installs: Callable[[], bool]      # whether make test must have it here
    fix: str = SETUP


# ------------------------------------------------------------------ the conditions
def _mpi(name: str) -> str | None:
    """collkit's build for MPI `name`: registered, launchable, every part built."""
    from collkit.campaign import platform as platforms
    from collkit.mpis import known
    found = platforms.detect()
    if name not in found.mpis:
        return found.missing.get(name) or f"no MPI named '{name}' is known here (collkit mpis)"
    gone = known.known()[name].build.missing_parts()
    return f"its build lacks {', '.join(gone)}" if gone else None


def _any_build(part: str) -> str | None:
    from collkit.common.errors import UserError
    from collkit.mpis import known
    try:
        known.any_build(part)
    except UserError as exc:
        return str(exc)
    return None


def _registry() -> str | None:
    from collkit.common.errors import UserError
    from collkit.library import registry
    try:
        registry.load()
    except UserError as exc:
        return str(exc)
    return None


def _bench_instr() -> str | None:
    from collkit.campaign import platform as platforms
    why = _mpi("openmpi")
    if why:
        return f"no Open MPI build ({why})"
    instr = platforms.instr_bench(platforms.detect().mpis["openmpi"].bench)
    return None if instr.exists() else f"{instr} is not built"


def _program(name: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"no `{name}` on PATH"


def _file(path: Path) -> Callable[[], str | None]:
    return lambda: None if path.exists() else f"{path} is not there"


def _chromium() -> str | None:
    import report_fixture
    return report_fixture.chromium_unavailable()


def _loop_program(name: str) -> Callable[[], str | None]:
    def why() -> str | None:
        import sys
        if str(REPO / "scripts") not in sys.path:
            sys.path.insert(0, str(REPO / "scripts"))
        import application_loop
        return application_loop.PROGRAMS[name].missing()
    return why


def _simgrid() -> str | None:
    from collkit.simulation import simgrid_install
    return None if simgrid_install.installed() else f"SimGrid {simgrid_install.VERSION} is not built"


def _simgrid_programs() -> str | None:
    from collkit.simulation import settings
    gone = [p for p in (settings.bench_path(), settings.replay_path()) if not p.exists()]
    return _simgrid() or (f"{', '.join(map(str, gone))} not built" if gone else None)


def _slurm() -> str | None:
    import slurm_fixture
    return slurm_fixture.unavailable() or None


def _nccl() -> str | None:
    from collkit.backends import nccl
    return None if nccl.find_header() is not None else "no nccl.h here"


def _fortran(mpi: str) -> Callable[[], str | None]:
    return _file(REPO / "build" / mpi / "tests" / "preload" / "ck_fortran_mpif")


DEPENDENCIES: dict[str, Dependency] = {
    "openmpi": Dependency("collkit's build for Open MPI", lambda: _mpi("openmpi"), _apt),
    "mpich": Dependency("collkit's build for MPICH", lambda: _mpi("mpich"), _always),
    # pinned PyPI wheels (scripts/mpis/), x86-64 only
    "impi": Dependency("collkit's build for Intel MPI (.impi)", lambda: _mpi("impi"), _x86_64),
    "openmpi5": Dependency("collkit's build for Open MPI 5 (.openmpi5)", lambda: _mpi("openmpi5"), _x86_64),
    # the compiler and launcher of Debian's package, which some tests name by path
    "debian-openmpi": Dependency("Debian's Open MPI (openmpi-bin: /usr/bin/mpicc.openmpi)",
                                 _file(Path("/usr/bin/mpicc.openmpi")), _apt),
    "collkit-bench-instr": Dependency("collkit-bench-instr for Open MPI", _bench_instr, _apt),
    "ck_trace": Dependency("ck_trace (any collkit build)", lambda: _any_build("trace"), _always),
    "registry": Dependency("libcollkit's registry (any collkit build)", _registry, _always),
    "fortran-openmpi": Dependency("the preload's Fortran programs for Open MPI (gfortran)",
                                  _fortran("openmpi"), _apt),
    "fortran-mpich": Dependency("the preload's Fortran programs for MPICH (gfortran, build/mpich-fortran)",
                                _fortran("mpich"), _apt),
    "tmux": Dependency("tmux", _program("tmux"), _apt),
    "strace": Dependency("strace", _program("strace"), _apt),
    "chromium": Dependency("Chromium (headless)", _chromium, _apt),
    "hpcc": Dependency("hpcc", _loop_program("hpcc"), _apt),
    "mpi4py-tests": Dependency("mpi4py and its tests (.mpich, build/mpi4py-*)", _loop_program("mpi4py-cco"),
                               _always),
    # SimGrid 4.1 is built from PyPI's sdist, with Boost's headers from apt
    "simgrid": Dependency("SimGrid 4.1", _simgrid, _apt),
    "simgrid-programs": Dependency("collkit-bench and collkit-replay for SimGrid (build/simgrid)",
                                   _simgrid_programs, _apt),
    "slurm": Dependency("a local Slurm (slurm-wlm, munge, root)", _slurm, _apt),
    # no package of setup.sh brings NCCL: a GPU machine's
    "nccl": Dependency("NCCL's headers", _nccl, _never, fix="a machine with CUDA and NCCL"),
}


@functools.cache
def why_missing(name: str) -> str | None:
    return DEPENDENCIES[name].missing()


def message(name: str) -> str | None:
    """The skip or failure text where `name` is missing here, else None."""
    why = why_missing(name)
    if why is None:
        return None
    dep = DEPENDENCIES[name]
    return f"{dep.what} is missing: {why}; install it with {dep.fix}"


def required(name: str) -> bool:
    return REQUIRE_ALL and DEPENDENCIES[name].setup_installs()


def check(*names: str) -> None:
    """Skip (or, under make test, fail) unless every dependency named is here."""
    for name in names:
        text = message(name)
        if text is None:
            continue
        if required(name):
            pytest.fail(f"{text} (make test requires it: COLLKIT_TESTS_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(text)


def mark(*names: str) -> pytest.MarkDecorator:
    for name in names:
        if name not in DEPENDENCIES:
            raise KeyError(f"no dependency named {name!r} in needs.py")
    return pytest.mark.needs(*names)


def mpi(name: str) -> pytest.MarkDecorator:
    """collkit's build for `name` (openmpi or mpich), for parametrized tests; its
    parts (collkit-bench, ck_trace, libcollkit-preload, the matrix through the
    plain MPI names, ...) come together, so they share its marker."""
    return mark(name)


def each_mpi() -> list:
    """openmpi and mpich as parameters of a test, each with its marker."""
    return [pytest.param(m, marks=mpi(m)) for m in ("openmpi", "mpich")]


def each_open_mpi() -> list:
    """Debian's Open MPI 4.1 and Open MPI 5 (.openmpi5) as parameters of a test,
    each with its marker: the same backend, two libraries whose tuned differs."""
    return [pytest.param(m, marks=mpi(m)) for m in ("openmpi", "openmpi5")]


def each_library() -> list:
    """openmpi, openmpi5 and mpich as parameters of a test, each with its marker."""
    return [*each_open_mpi(), pytest.param("mpich", marks=mpi("mpich"))]


def fortran(name: str) -> pytest.MarkDecorator:
    return mark(name, f"fortran-{name}")


openmpi = mark("openmpi")
mpich = mark("mpich")
impi = mark("impi")
impi_traced = mark("impi", "strace")      # Intel MPI's messages by strace (impi_traffic.py)
openmpi5 = mark("openmpi5")
both_mpis = mark("openmpi", "mpich")
debian_openmpi = mark("debian-openmpi")
bench_instr = mark("collkit-bench-instr")
ck_trace = mark("ck_trace")
registry = mark("registry")
tmux = mark("tmux")
chromium = mark("chromium")
hpcc = mark("hpcc")
mpi4py_tests = mark("mpi4py-tests")
simgrid = mark("simgrid")
simgrid_programs = mark("simgrid-programs")
slurm = mark("slurm")
nccl = mark("nccl")
