"""Synthetic profiles (profile_file's dataclasses) for the loop's tests: no MPI needed."""

from __future__ import annotations

from pathlib import Path

from collkit.program import profile_file
from collkit.program.profile_file import CallClass, Profile


def call(collective: str, nbytes: int, time_s: float, *, calls: int = 100, comm: str = "world", comm_size: int = 4,
         dtype: str | None = None, datatype: str = "MPI_BYTE", op: str | None = None, root: int | None = None,
         in_place: bool = False) -> CallClass:
    return CallClass(collective=collective, comm=comm, comm_size=comm_size, bytes=nbytes, datatype=datatype,
                     dtype=dtype, op=op, root=root, in_place=in_place, calls=calls, time_max_s=time_s,
                     time_sum_s=time_s * comm_size, ranks=comm_size)


def profile(classes, *, mpi: str = "openmpi", ranks: int = 4, wall_s: float = 10.0, complete: bool = True,
            exit_status: int = 0) -> Profile:
    return Profile(complete=complete, exit_status=exit_status, incomplete_reason="" if complete else "it crashed",
                   created="2026-11-27T08:00:00Z", collkit_version="test",
                   command=("mpirun", "-n", str(ranks), "./app"),
                   cwd="/tmp", mpi_name=mpi, mpi_family=mpi, mpi_library_version="Open MPI v4.1.4",
                   ranks=ranks, ranks_reported=ranks, nodes=1, hosts=("n001",), wall_s=wall_s, mpi_span_s=wall_s * 0.9,
                   classes=tuple(classes))


def write(path: Path, classes, **kw) -> Path:
    profile_file.dump(profile(classes, **kw), path)
    return path
