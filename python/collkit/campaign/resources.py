"""What a launch on this machine needs, estimated before it starts.

Local launches (mpirun here) run every rank as a process of this machine: a
rank count far beyond the cores, or buffers beyond the memory, would not
measure anything and could take the machine down. Points past these limits are
skipped with the estimate in the reason; `collkit check` refuses such rank
counts in one line. Batch (Slurm) platforms run elsewhere and are not judged
here; simulated ones have their own estimate (simulation/memory.py)."""

from __future__ import annotations

from collkit.common import machine
from collkit.simulation import memory

RANKS_PER_CORE = 64              # beyond this, oversubscribed ranks only wait for each other
PROCESS_BASELINE = 64 << 20      # an MPI process before any buffer (Open MPI and MPICH here: 20-40 MiB RSS)


def max_ranks() -> int:
    return RANKS_PER_CORE * machine.cores()


def process_refusal(ranks: int) -> str:
    """Why this many local ranks cannot run here, or ''."""
    limit = max_ranks()
    if ranks <= limit:
        return ""
    return (f"{ranks} ranks on this machine's {machine.cores()} cores is more than {limit} "
            f"({RANKS_PER_CORE} per core); run it on a cluster (a platform file with [slurm])")


def local_estimate(collective: str, ranks: int, count: int, dtype: str, in_place: bool) -> int:
    """Bytes a local point needs: every rank's buffers (the collective's
    descriptor), one vector-sized temporary per rank, and the processes."""
    total, largest = memory.buffers(collective, ranks, count, dtype, in_place)
    return total + ranks * largest + ranks * PROCESS_BASELINE


def point_refusal(collective: str, ranks: int, count: int, dtype: str, in_place: bool,
                  avail: int | None) -> str:
    """Why a point cannot run locally, or ''."""
    why = process_refusal(ranks)
    if why:
        return why
    need = local_estimate(collective, ranks, count, dtype, in_place)
    if machine.fits(need, avail):
        return ""
    return (f"it needs about {machine.gib(need)} ({ranks} processes with their buffers), above "
            f"{int(machine.MARGIN * 100)}% of this machine's {machine.gib(avail or 0)} available memory")
