"""The MPI libraries collkit can launch on this machine, and how.

Open MPI comes from the distribution (``mpirun.openmpi``); MPICH is the PyPI
``mpich`` wheel installed by ``make setup`` into ``<repo>/.mpich`` so that its
``mpicc``/``mpirun`` never shadow Open MPI's. Debian's own MPICH 4.0.2 is not
used: it busy-polls when ranks outnumber cores and runs ~1000x slower here."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from collkit.common.errors import UserError
from collkit.common.paths import repo_root

MPI_NAMES = ("openmpi", "mpich")


@dataclass(frozen=True)
class MPIInstall:
    name: str
    mpirun: Path
    flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def launch(self, ranks: int, program: Path, args: list[str]) -> list[str]:
        return [str(self.mpirun), "-n", str(ranks), *self.flags, str(program), *args]

    def environment(self) -> dict[str, str]:
        merged = dict(os.environ)
        merged.update(self.env)
        return merged


def _openmpi() -> MPIInstall:
    override = os.environ.get("COLLKIT_OPENMPI_MPIRUN")
    found = override or shutil.which("mpirun.openmpi")
    if not found or not Path(found).exists():
        raise UserError("Open MPI not found (no mpirun.openmpi): run `make setup` "
                        "or install openmpi-bin, or set COLLKIT_OPENMPI_MPIRUN")
    return MPIInstall(
        name="openmpi",
        mpirun=Path(found),
        # This machine has fewer cores than the rank counts we test.
        flags=("--oversubscribe",),
        env={"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    )


def _mpich() -> MPIInstall:
    prefix = Path(os.environ.get("COLLKIT_MPICH_PREFIX", repo_root() / ".mpich"))
    mpirun = prefix / "bin" / "mpirun"
    if not mpirun.exists():
        raise UserError(f"MPICH not found at {prefix}: run `make setup` "
                        "(it installs the PyPI mpich wheel there) or set COLLKIT_MPICH_PREFIX")
    return MPIInstall(
        name="mpich",
        mpirun=mpirun,
        # MPICH's progress engine spins unless throttled; with more ranks than
        # cores that costs three orders of magnitude.
        env={
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
            "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
            "MPIR_CVAR_POLLS_BEFORE_YIELD": "1",
        },
    )


def find(name: str) -> MPIInstall:
    if name == "openmpi":
        return _openmpi()
    if name == "mpich":
        return _mpich()
    raise UserError(f"unknown MPI '{name}'; choose one of {', '.join(MPI_NAMES)}")
