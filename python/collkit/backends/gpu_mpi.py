"""Whether an MPI library takes CUDA device buffers (is "CUDA-aware"), and how we know.

Open MPI: ``ompi_info --parsable --all`` reports the build-time answer as the
read-only parameter ``opal_built_with_cuda_support`` (Open MPI 4.x;
``mpi_built_with_cuda_support`` in some releases), the same fact that
``MPIX_Query_cuda_support()`` of ``mpi-ext.h`` returns at run time.
MPICH: GPU support is compiled in with ``--with-cuda`` (``mpichversion``'s
configure line) and switched off at run time by ``MPIR_CVAR_ENABLE_GPU=0``
(its default is listed by ``mpivars``); ``MPIX_GPU_query_support()`` is the
run-time form of the same answer.

Both MPIs installed by ``make setup`` here answer "no" (Open MPI 4.1 from
Debian: false; the MPICH wheel: configured without CUDA, ENABLE_GPU=0), so
the `mpi` backend runs on host buffers only (docs/gpu.md).

Which tool is asked is the family's: `MPIBackend.cuda_aware(install)`
(backends/protocol.py, answered in openmpi.py and mpich.py) runs it and reads its
output here."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class CudaAware:
    mpi: str
    aware: bool
    how: str        # the evidence, one line

    def to_json(self) -> dict:
        return {"aware": self.aware, "how": self.how}


def from_ompi_info(text: str) -> CudaAware:
    """The answer in `ompi_info --parsable --all` output."""
    for key in ("mpi_built_with_cuda_support", "opal_built_with_cuda_support"):
        m = re.search(rf"^mca:[a-z]+:base:param:{key}:value:(\w+)$", text, re.MULTILINE)
        if m:
            value = m.group(1).lower()
            return CudaAware("openmpi", value in ("true", "1"), f"ompi_info: {key} = {value}")
    return CudaAware("openmpi", False, "ompi_info reports no *_built_with_cuda_support parameter "
                                       "(built without CUDA support)")


def from_mpich(version_text: str, vars_text: str, env: dict[str, str]) -> CudaAware:
    """The answer in `mpichversion` and `mpivars` output and the environment."""
    m = re.search(r"^MPICH configure:\s*(.*)$", version_text, re.MULTILINE)
    configure = m.group(1) if m else ""
    if not re.search(r"--with-cuda(=\S+)?(\s|$)", configure):
        return CudaAware("mpich", False, f"mpichversion: configured without --with-cuda ({configure.strip() or '?'})")
    enable = env.get("MPIR_CVAR_ENABLE_GPU")
    source = "environment"
    if enable is None:
        d = re.search(r"MPIR_CVAR_ENABLE_GPU\s*=\s*(\d+)", vars_text)
        enable, source = (d.group(1) if d else "1"), "mpivars default"
    if enable.strip() == "0":
        return CudaAware("mpich", False, f"built --with-cuda but MPIR_CVAR_ENABLE_GPU=0 ({source})")
    return CudaAware("mpich", True, f"built --with-cuda, MPIR_CVAR_ENABLE_GPU={enable} ({source})")
