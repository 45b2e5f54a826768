"""The format of Open MPI's classic coll/tuned rules file
(`coll_tuned_dynamic_rules_filename`), as Open MPI 4.1's parser reads it, and 5.0's
for a file without a version line (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c;
docs/tuning-files.md, "Open MPI 5.0"): rows of
integers, `#` comments, the nesting collectives -> communicator sizes -> message
rules `size algorithm fan-in/out segment-size`. campaign/tuning.py tells a file's
library by its content and checks it here; backends/openmpi.py reads its ids."""

from __future__ import annotations

import re

from collkit.common.errors import UserError

# Open MPI's coll/tuned collective ids (coll_base_functions.h), by the MPI call's
# name: collkit's reduce_scatter is MPI_Reduce_scatter_block, id 13.
OMPI_COLLECTIVE_IDS = {
    0: "allgather", 1: "allgatherv", 2: "allreduce", 3: "alltoall", 4: "alltoallv", 5: "alltoallw",
    6: "barrier", 7: "bcast", 8: "exscan", 9: "gather", 10: "gatherv", 11: "reduce",
    12: "reduce_scatter", 13: "reduce_scatter_block", 14: "scan", 15: "scatter", 16: "scatterv",
}


def tokens(text: str) -> list[str] | None:
    """The file's numbers in order, or None when a row holds anything else."""
    found: list[str] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not all(re.fullmatch(r"-?\d+", w) for w in words):
            return None
        found += words
    return found


def structure(tokens: list[str], where: str) -> tuple[str, ...]:
    """Walk the nesting as Open MPI's parser does; UserError naming the first fault.
    Returns the collectives the file has rules for."""
    for t in tokens:
        if len(t.lstrip("-")) > 1 and t.lstrip("-").startswith("0"):
            # Open MPI reads with %li: a leading 0 makes the number octal.
            raise UserError(f"{where}: '{t}' has a leading zero, which Open MPI reads as octal; "
                            "write the number without it")
    values = [int(t) for t in tokens]
    pos = 0

    def take(what: str) -> int:
        nonlocal pos
        if pos >= len(values):
            raise UserError(f"{where}: the file ends where Open MPI expects {what}; "
                            "complete the rules or correct the counts above")
        pos += 1
        return values[pos - 1]

    covered: list[str] = []
    ncoll = take("the number of collectives")
    if ncoll < 1:
        raise UserError(f"{where}: the file declares {ncoll} collectives; declare at least one")
    for _ in range(ncoll):
        cid = take("a collective id")
        if cid not in OMPI_COLLECTIVE_IDS:
            raise UserError(f"{where}: collective id {cid} is not one of Open MPI's "
                            f"(0-{max(OMPI_COLLECTIVE_IDS)}); see docs/tuning-files.md")
        name = OMPI_COLLECTIVE_IDS[cid]
        if name in covered:
            raise UserError(f"{where}: collective {name} (id {cid}) has rules twice; merge them")
        covered.append(name)
        ncomm = take(f"the number of communicator sizes of {name}")
        if ncomm < 1:
            raise UserError(f"{where}: {name} declares {ncomm} communicator sizes; declare at least one")
        last_comm = 0
        for _ in range(ncomm):
            comm = take(f"a communicator size of {name}")
            if comm < 1 or comm <= last_comm:
                raise UserError(f"{where}: {name} communicator size {comm} is not above the previous "
                                f"one ({last_comm}); sizes ascend from 1")
            last_comm = comm
            nmsg = take(f"the number of message rules of {name} at {comm} ranks")
            if nmsg < 1:
                raise UserError(f"{where}: {name} at {comm} ranks declares {nmsg} message rules; "
                                "declare at least one")
            last_size = -1
            for i in range(nmsg):
                size = take(f"a message size of {name} at {comm} ranks")
                alg = take("an algorithm id")
                take("a fan-in/out")
                take("a segment size")
                if i == 0 and size != 0:
                    raise UserError(f"{where}: the first message rule of {name} at {comm} ranks starts at "
                                    f"{size} B; Open MPI rejects the whole file unless it starts at 0")
                if size <= last_size:
                    raise UserError(f"{where}: {name} at {comm} ranks: message size {size} is not above "
                                    f"the previous one ({last_size}); sizes ascend")
                if alg < 0:
                    raise UserError(f"{where}: {name} at {comm} ranks, {size} B: algorithm {alg} is "
                                    "negative; use the ids `ompi_info --all` lists (0: the fixed rules)")
                last_size = size
    if pos != len(values):
        raise UserError(f"{where}: {len(values) - pos} numbers follow the last rule; the counts above "
                        "declare fewer rules than the file holds")
    return tuple(covered)


def rules(data: bytes) -> dict[str, list[tuple[int, list[tuple[int, int]]]]]:
    """An Open MPI rules file as {collective: [(comm size, [(msg size, alg id)])]}
    (already checked by read())."""
    nums = [int(t) for t in tokens(data.decode("ascii")) or []]
    out: dict[str, list[tuple[int, list[tuple[int, int]]]]] = {}
    pos = 1
    for _ in range(nums[0]):
        cid, ncomm = nums[pos], nums[pos + 1]
        pos += 2
        comms = []
        for _ in range(ncomm):
            comm, nmsg = nums[pos], nums[pos + 1]
            pos += 2
            msgs = []
            for _ in range(nmsg):
                msgs.append((nums[pos], nums[pos + 1]))
                pos += 4
            comms.append((comm, msgs))
        out[OMPI_COLLECTIVE_IDS[cid]] = comms
    return out
