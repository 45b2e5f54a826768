"""What each MPI library offers, and how to force one of its algorithms.

For a given MPI install, :func:`discover` asks the library itself which
algorithms each collective can be forced to use (Open MPI: ``ompi_info``;
MPICH: ``mpivars``; SimGrid's SMPI on a simulated platform: smpirun) and returns a
:class:`LibraryOffer`: every forceable algorithm under its canonical collkit name,
its native name and id, the environment that forces it and the MPI_T control
variables that show the forcing took.

The package is laid out so that nothing imports in a circle:

* ``offer.py``: the data (LibraryAlgorithm, Excluded, LibraryOffer, REQUIREMENTS);
* ``protocol.py``: :class:`MPIBackend`, what an MPI family answers (discovery,
  forcing, tuned environments, parameter variables, tuning-file formats and their
  proofs, launcher flags, whether an algorithm can be switched at run time);
* ``openmpi.py``, ``mpich.py``, ``smpi.py``: one backend per family, with the tables
  that translate native names into canonical ones;
* ``families.py``: the list of families and the choice of a backend
  (:func:`backend_for`, :func:`platform_backend`, :func:`platform_offer`);
* ``parameters.py`` (library parameters a spec may sweep), ``gpu_mpi.py`` (CUDA
  awareness), ``ompi_monitoring.py`` (Open MPI's per-peer traffic), ``nccl.py`` (the
  `nccl` backend, not an MPI).

This file only re-exports; family modules import ``offer`` and ``protocol``, never it.

Canonical names: the same algorithm has the same name whichever library runs
it, and where it is one of libcollkit's registry algorithms it carries that
registry name (``ring``, ``rabenseifner``, ``binomial_doubling``, ...).
Everything else keeps the library's own name, lower case with underscores."""

from __future__ import annotations

from collkit.backends.families import (
    BACKENDS,
    backend_for,
    default_readback,
    discover,
    for_format,
    forcing_source,
    platform_backend,
    platform_offer,
    tuning_formats,
)
from collkit.backends.offer import REQUIREMENTS, Excluded, LibraryAlgorithm, LibraryOffer, default_only
from collkit.backends.protocol import MPIBackend, RuntimeSwitch, clear_cache
from collkit.library.registry import COLLECTIVES

__all__ = [
    "BACKENDS",
    "COLLECTIVES",
    "Excluded",
    "LibraryAlgorithm",
    "LibraryOffer",
    "MPIBackend",
    "REQUIREMENTS",
    "RuntimeSwitch",
    "backend_for",
    "clear_cache",
    "default_only",
    "default_readback",
    "discover",
    "for_format",
    "forcing_source",
    "platform_backend",
    "platform_offer",
    "tuning_formats",
]
