"""What a simulated point needs in memory, and whether this machine has it.

All ranks of an SMPI run live in one process, so a point's buffers are paid
once per rank: 1,024 ranks of a 16 MiB alltoall want 1,024 x 2 x 16 GiB. The
estimate follows collkit-bench's buffer layout (bench/fill.c: send and receive
buffers per rank, p blocks where the collective has p blocks, root-only buffers
once) plus one vector-sized temporary per rank for the algorithm (the common
worst case of libcollkit and SMPI algorithms), plus the simulator's own cost
per rank (stack, privatised globals, bookkeeping; about 0.2 MiB measured at
1,024 ranks here, rounded up).

SMPI shared malloc (`--cfg=smpi/auto-shared-malloc-thresh`) folds every large
allocation onto a small shared block: simulated times are unchanged, but buffer
contents are garbage, so collkit uses it only when validation is off, and only
when a point would otherwise need more than SHARED_ABOVE bytes."""

from __future__ import annotations

from pathlib import Path

from collkit.spec import DTYPE_SIZES

PER_RANK_OVERHEAD = 512 * 1024          # simulator cost per rank (0.2 MiB measured, doubled)
BASE_OVERHEAD = 256 * 1024 * 1024       # the simulator and platform themselves
SHARED_ABOVE = 1 << 30                  # shared buffers above 1 GiB of point buffers (validation off)
SHARED_THRESH = 65536                   # allocations from this size on are folded when shared
SHARED_BLOCK = 1 << 20                  # SMPI's shared-malloc block: what a folded buffer really costs
MARGIN = 0.8                            # use at most this share of MemAvailable


def buffers(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False) -> tuple[int, int]:
    """(bytes of all ranks' send+receive buffers, the largest single buffer)."""
    es = DTYPE_SIZES[dtype]
    c, pc = count * es, ranks * count * es
    p = ranks
    if collective == "bcast":
        per_rank, root_extra, big = c, 0, c
    elif collective == "reduce":
        per_rank, root_extra, big = c, c, c
    elif collective == "gather":
        per_rank, root_extra, big = c, pc, pc
    elif collective == "scatter":
        per_rank, root_extra, big = c, pc, pc
    elif collective == "allgather":
        per_rank, root_extra, big = (0 if in_place else c) + pc, 0, pc
    elif collective == "reduce_scatter":
        per_rank, root_extra, big = (pc if in_place else pc + c), 0, pc
    elif collective == "allreduce":
        per_rank, root_extra, big = (c if in_place else 2 * c), 0, c
    elif collective == "alltoall":
        per_rank, root_extra, big = (pc if in_place else 2 * pc), 0, pc
    else:
        raise ValueError(f"unknown collective {collective!r}")
    return p * per_rank + root_extra, big


def estimate(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False,
             shared: bool = False) -> int:
    """Bytes one simulated point needs: buffers, a temporary per rank, the simulator."""
    total, big = buffers(collective, ranks, count, dtype, in_place)
    temp = ranks * big
    data = total + temp
    if shared:
        # folded buffers cost one block each per call site, whatever their size
        data = min(data, ranks * 3 * SHARED_BLOCK)
    return data + ranks * PER_RANK_OVERHEAD + BASE_OVERHEAD


def needs_shared(point_bytes: int) -> bool:
    return point_bytes > SHARED_ABOVE


def available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def point_data(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False) -> int:
    """Buffers plus per-rank temporaries: what shared malloc would fold."""
    total, big = buffers(collective, ranks, count, dtype, in_place)
    return total + ranks * big


def shared_for(collective: str, ranks: int, count: int, dtype: str, in_place: bool, validate: str) -> bool:
    """Whether a point runs with shared (folded) buffers."""
    return validate == "none" and needs_shared(point_data(collective, ranks, count, dtype, in_place))


def refusal(collective: str, ranks: int, count: int, dtype: str, in_place: bool, validate: str,
            avail: int | None, max_ranks: int) -> str:
    """Why a point cannot be simulated on this machine, or ''."""
    if ranks > max_ranks:
        return (f"{ranks} ranks is above the about {max_ranks} that SMPI can privatise in one process "
                "(one memory map per rank and segment; kernel map count)")
    shared = shared_for(collective, ranks, count, dtype, in_place, validate)
    need = estimate(collective, ranks, count, dtype, in_place, shared)
    if avail is None or need <= avail * MARGIN:
        return ""
    hint = ""
    if not shared and needs_shared(point_data(collective, ranks, count, dtype, in_place)):
        hint = "; with measure.validate = \"none\" its buffers would be shared (folded) and fit"
        folded = estimate(collective, ranks, count, dtype, in_place, True)
        if folded > avail * MARGIN:
            hint = ""
    return (f"simulating it needs about {gib(need)} ({ranks} ranks in one process), above "
            f"{int(MARGIN * 100)}% of this machine's {gib(avail)} available memory{hint}")
