"""Test programs in C (tests/python/fixtures/*.c) built with each MPI's own mpicc,
once per test module: the one way the tests build them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

from collkit.mpis import known
from collkit.mpis.build import wrapper_env


def builder(tmp_path_factory, source: Path) -> Callable[[str], Path]:
    """get(mpi) -> the executable of `source` built with that MPI's mpicc (-O1), built on first use."""
    built: dict[str, Path] = {}

    def get(mpi: str) -> Path:
        if mpi not in built:
            exe = tmp_path_factory.mktemp(f"{source.stem}-{mpi}") / source.stem
            mpicc = Path(known.find(mpi).mpicc)
            # Intel MPI's wrapper finds its library through I_MPI_ROOT (collkit build sets it too)
            subprocess.run([str(mpicc), "-O1", "-o", str(exe), str(source), "-lm"], check=True,
                           env=wrapper_env(mpicc, None))
            built[mpi] = exe
        return built[mpi]

    return get
