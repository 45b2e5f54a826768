"""What a simulated point needs in memory, and whether this machine has it.

All ranks of an SMPI run live in one process, so a point's buffers are paid
once per rank: 1,024 ranks of a 16 MiB alltoall want 1,024 x 2 x 16 GiB. The
estimate follows collkit-bench's buffer layout (the collective's descriptor in
the registry: send and receive buffers per rank, p blocks where the collective
has p blocks, root-only buffers once) plus one vector-sized temporary per rank for the algorithm (the common
worst case of libcollkit and SMPI algorithms), plus the simulator's own cost
per rank (stack, privatised globals, bookkeeping; about 0.2 MiB measured at
1,024 ranks here, rounded up).

SMPI shared malloc (`--cfg=smpi/auto-shared-malloc-thresh`) folds every large
allocation onto a small shared block: simulated times are unchanged, but buffer
contents are garbage, so collkit uses it only when validation is off, and only
when a point would otherwise need more than SHARED_ABOVE bytes."""

from __future__ import annotations

from collkit.common.machine import MARGIN, gib
from collkit.library import registry

PER_RANK_OVERHEAD = 512 * 1024          # simulator cost per rank (0.2 MiB measured, doubled)
BASE_OVERHEAD = 256 * 1024 * 1024       # the simulator and platform themselves
SHARED_ABOVE = 1 << 30                  # shared buffers above 1 GiB of point buffers (validation off)
SHARED_THRESH = 65536                   # allocations from this size on are folded when shared (at least)
PROCESSOR_NAME = 100                    # SMPI's MPI_MAX_PROCESSOR_NAME (smpi/smpi.h)
SHARED_BLOCK = 1 << 20                  # SMPI's default shared-malloc block: what a folded buffer really costs
MAX_SHARED_BLOCK = 1 << 30              # the largest block collkit asks for (one file of it per call site)


def _items(collective: str, ranks: int, count: int, dtype: str, in_place: bool) -> list[tuple[int, int]]:
    """collkit-bench's buffers of one point as (bytes of one buffer, how many ranks
    hold it): the collective's send and receive blocks at the root and at the
    other ranks, as its descriptor gives them (collkit-bench sizes them from the
    same descriptor); in place drops the send buffer where MPI_IN_PLACE applies."""
    desc = registry.collective(collective)
    es = registry.datatype_size(dtype)
    # (is_root, ranks in that role): a collective without a root has one role.
    roles = [(True, 1), (False, ranks - 1)] if desc.has_root else [(False, ranks)]
    items: list[tuple[int, int]] = []
    for elems in (desc.send_elems, desc.recv_elems):
        # One entry per buffer size and kind, ranks summed over the roles.
        held: dict[int, int] = {}
        for is_root, n in roles:
            nbytes = elems(count, ranks, is_root, in_place) * es
            if n > 0 and nbytes > 0:
                held[nbytes] = held.get(nbytes, 0) + n
        items += held.items()
    return items


def buffers(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False) -> tuple[int, int]:
    """(bytes of all ranks' send+receive buffers, the largest single buffer; 0 for
    count 0, which allocates nothing)."""
    items = _items(collective, ranks, count, dtype, in_place)
    return sum(b * n for b, n in items), max((b for b, _ in items), default=0)


def estimate(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False,
             shared: bool = False, thresh: int = SHARED_THRESH) -> int:
    """Bytes one simulated point needs: buffers, a vector-sized temporary per rank,
    the simulator. Shared: allocations of `thresh` bytes or more are folded onto
    SMPI's one shared block per call site (measured: a 1,024-rank 1 MiB allreduce
    fell from 3.35 GB to 196 MB), so they are counted as a few blocks in all."""
    items = _items(collective, ranks, count, dtype, in_place)
    if items:   # count 0 has no buffers and no temporary
        items.append((max(b for b, _ in items), ranks))      # the algorithm's temporary
    folded = [it for it in items if shared and it[0] >= thresh]
    block = shared_blocksize(collective, ranks, count, dtype, in_place)
    data = sum(b * n for b, n in items if (b, n) not in folded) + len(folded) * block
    return data + ranks * PER_RANK_OVERHEAD + BASE_OVERHEAD


def shared_blocksize(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False) -> int:
    """SMPI's shared-malloc block for a point: a power of two at least its largest buffer.
    SMPI maps a folded allocation block by block, one memory map per block, so with its
    1 MiB default 1,024 ranks of a 16 KiB-block alltoall (16 MiB send, receive and work
    buffers) wanted about 65,536 maps, the kernel's limit (vm.max_map_count 65,530): "Could
    not map folded virtual memory", abort. One block per buffer keeps it to a few maps a
    rank; the block is one file per call site, so its size is memory paid a few times."""
    _, largest = buffers(collective, ranks, count, dtype, in_place)
    return min(MAX_SHARED_BLOCK, max(SHARED_BLOCK, 1 << max(0, largest - 1).bit_length()))


def shared_threshold(ranks: int, max_iterations: int) -> int:
    """The smallest allocation SMPI may fold. SMPI does not copy message data into
    folded buffers, so every buffer collkit-bench's harness receives into must stay
    below it: rank 0's gather of all host names (ranks x MPI_MAX_PROCESSOR_NAME) and
    the per-round timing vectors (2 doubles per iteration, at most 65,536
    iterations a round, bench/run_point.c). Twice the largest, as a power of two."""
    harness = max(ranks * PROCESSOR_NAME, (2 * min(max_iterations, 65536) + 2) * 8)
    need = max(SHARED_THRESH, 2 * harness)
    return 1 << (need - 1).bit_length()


def needs_shared(point_bytes: int) -> bool:
    return point_bytes > SHARED_ABOVE


def point_data(collective: str, ranks: int, count: int, dtype: str, in_place: bool = False) -> int:
    """Buffers plus per-rank temporaries: what shared malloc would fold."""
    total, big = buffers(collective, ranks, count, dtype, in_place)
    return total + ranks * big


def shared_for(collective: str, ranks: int, count: int, dtype: str, in_place: bool, validate: str) -> bool:
    """Whether a point runs with shared (folded) buffers."""
    return validate == "none" and needs_shared(point_data(collective, ranks, count, dtype, in_place))


def refusal(collective: str, ranks: int, count: int, dtype: str, in_place: bool, validate: str,
            avail: int | None, max_ranks: int, max_iterations: int = 1000) -> str:
    """Why a point cannot be simulated on this machine, or ''."""
    if ranks > max_ranks:
        return (f"{ranks} ranks is above the about {max_ranks} that SMPI can privatise in one process "
                "(one memory map per rank and segment; kernel map count)")
    shared = shared_for(collective, ranks, count, dtype, in_place, validate)
    thresh = shared_threshold(ranks, max_iterations)
    need = estimate(collective, ranks, count, dtype, in_place, shared, thresh)
    if avail is None or need <= avail * MARGIN:
        return ""
    hint = ""
    if not shared and needs_shared(point_data(collective, ranks, count, dtype, in_place)):
        hint = "; with measure.validate = \"none\" its buffers would be shared (folded) and fit"
        folded = estimate(collective, ranks, count, dtype, in_place, True, thresh)
        if folded > avail * MARGIN:
            hint = ""
    return (f"simulating it needs about {gib(need)} ({ranks} ranks in one process), above "
            f"{int(MARGIN * 100)}% of this machine's {gib(avail)} available memory{hint}")
