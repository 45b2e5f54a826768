"""The messages one collective call moves under Intel MPI on one node, seen from outside
the library: with I_MPI_SHM_CMA=1 and a CMA threshold of 1 byte, Intel's shared-memory
transport moves each large message as one process_vm_readv of the receiver from the
sender's memory (Linux's cross-memory attach), which strace shows with the sender's
process id and the bytes. fixtures/cma_coll.c prints each rank's pid, so every copy is
named (sender rank, receiver rank, bytes): the schedule a preset ran, without timing.

Shown on 2021.19 (tests/python/test_impi_schedules.py): allgather, alltoall and scatter
move their blocks this way; gather moves none (every preset: its blocks go through the
shared cells), so it has no trace here."""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

from mpi_programs import builder

SOURCE = Path(__file__).parent / "fixtures" / "cma_coll.c"
ENV = {"I_MPI_SHM_CMA": "1", "I_MPI_SHM_CMA_THRESHOLD": "1"}
_PID = re.compile(r"rank (\d+) pid (\d+)")
_BAD = re.compile(r"rank (\d+) bad (\d+)")
# "PID process_vm_readv(PEER, ..." or its "<... process_vm_readv resumed>...= BYTES" half
_CALL = re.compile(r"^(\d+)\s+(?:process_vm_readv\((\d+),|<\.\.\. process_vm_readv resumed>)")
_RESULT = re.compile(r"= (\d+)$")
# Intel's own start-up reads 8 bytes of each neighbour; no message of the fixture is that small
START_UP_BYTES = 8


def program(tmp_path_factory):
    """get("impi") -> cma_coll built with Intel MPI's wrapper (once per test module)."""
    return builder(tmp_path_factory, SOURCE)


def messages(program: Path, collective: str, block: int, ranks: int, env: dict[str, str], tmp: Path
             ) -> collections.Counter:
    """The (sender, receiver, bytes) of every message of one call, with their counts."""
    from collkit.mpis import known
    install = known.find("impi").install()
    log = tmp / "strace.txt"
    argv = ["strace", "-f", "-qq", "-e", "trace=process_vm_readv", "-e", "signal=none", "-o", str(log),
            *install.launch(ranks, program, [collective, str(block)])]
    proc = subprocess.run(argv, env={**install.environment(), **ENV, **env}, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "Incorrect" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    rank_of = {int(pid): int(rank) for rank, pid in _PID.findall(proc.stdout)}
    bad = dict(_BAD.findall(proc.stdout))
    assert len(rank_of) == ranks and bad == {str(r): "0" for r in range(ranks)}, proc.stdout
    peer: dict[int, int] = {}
    seen: collections.Counter = collections.Counter()
    for line in log.read_text().splitlines():
        m = _CALL.match(line)
        if m is None:
            continue
        pid = int(m.group(1))
        if m.group(2):
            peer[pid] = int(m.group(2))
        done = _RESULT.search(line)
        if done is None or pid not in rank_of or peer.get(pid) not in rank_of:
            continue
        nbytes = int(done.group(1))
        if nbytes > START_UP_BYTES:
            seen[(rank_of[peer[pid]], rank_of[pid], nbytes)] += 1
    return seen
