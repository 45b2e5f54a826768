"""The MPI families, and which backend answers for an MPI (backends/protocol.py).

Like launch/launchers.py for launchers, this is the only place that lists the backends:
each says itself which family it serves (`MPIBackend.serves`; mpis/identity.py's KINDS
tells an MPI's family from its version string), and an MPI of
no family collkit knows gets :class:`DefaultOnlyBackend` (its default algorithms only,
no MPI_T readback, no tuning file, variables passed hydra's way). Discovery on a
platform is decided here once (`platform_offer`), for campaign/plan.py and
specbuild/offer.py alike: SimGrid's SMPI on a simulated platform, the library's own tool
everywhere else."""

from __future__ import annotations

from collkit.backends.impi import IntelMPIBackend
from collkit.backends.mpich import MPICHBackend
from collkit.backends.offer import LibraryOffer
from collkit.backends.openmpi import OpenMPIBackend
from collkit.backends.protocol import DefaultOnlyBackend, MPIBackend
from collkit.backends.smpi import SMPIBackend
from collkit.common.errors import UserError
from collkit.library.registry import check_collective
from collkit.mpis.install import MPIInstall

# DefaultOnlyBackend last: it serves whatever the others do not
BACKENDS: tuple[MPIBackend, ...] = (OpenMPIBackend(), MPICHBackend(), IntelMPIBackend(), SMPIBackend(),
                                    DefaultOnlyBackend())


def backend_for(mpi: MPIInstall | str) -> MPIBackend:
    """The backend of an install's family, or of a family named as a string (a
    LibraryOffer's `mpi`, a profile's recorded family)."""
    family = mpi if isinstance(mpi, str) else mpi.family
    return next(b for b in BACKENDS if b.serves(family))


def platform_backend(platform, name: str) -> MPIBackend:
    """The backend of the platform's MPI `name` (campaign/platform.py's Platform): SMPI,
    standing for that library, on a simulated platform; else the install's family's."""
    pm = platform.mpi(name)
    if platform.simgrid is not None:
        return SMPIBackend(pm.name, pm.bench)
    return backend_for(pm.install)


def platform_offer(platform, name: str) -> LibraryOffer:
    """What the platform's MPI `name` offers: the one discovery `collkit run`, `collkit
    spec` and `collkit list --platform` use."""
    return platform_backend(platform, name).discover(platform.mpi(name).install)


def discover(mpi: MPIInstall) -> LibraryOffer:
    """What an installed MPI offers, asked through its family's tool (cached)."""
    return backend_for(mpi).discover(mpi)


def forcing_source(mpi: MPIInstall) -> str:
    """One line for `collkit mpis`: where forcing comes from, or why there is none."""
    return backend_for(mpi).forcing_source(mpi)


def default_readback(family: str, collective: str) -> tuple[str, ...]:
    """MPI_T variables to record for an unforced point of `family`; none for an MPI
    collkit cannot force."""
    return backend_for(family).default_readback(check_collective(collective))


def tuning_formats() -> tuple[str, ...]:
    """The libraries' own tuning-file formats (`collkit tune --format`), in family order."""
    return tuple(f for b in BACKENDS for f in b.tuning_formats())


def for_format(fmt: str) -> MPIBackend:
    """The backend whose library reads tuning files of format `fmt`."""
    found = next((b for b in BACKENDS if b.reads(fmt)), None)
    if found is None:
        raise UserError(f"no MPI library reads tuning files of format '{fmt}'; library formats: "
                        f"{', '.join(tuning_formats())}")
    return found


def tuning_file_variables() -> tuple[str, ...]:
    """The MPI_T control variables through which libraries name the tuning file they
    read, whichever MPI a record comes from (campaign/record.py reads them back)."""
    return tuple(b.tuning_file_variable for b in BACKENDS if b.tuning_file_variable)
