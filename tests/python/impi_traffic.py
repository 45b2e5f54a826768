"""What one collective call moves under Intel MPI on one node, seen from outside the
algorithm, two ways (fixtures/cma_coll.c prints each rank's pid and checks its result):

* messages(): with I_MPI_SHM_CMA=1 and a CMA threshold of 1 byte, Intel's shared-memory
  transport moves each large message as one process_vm_readv of the receiver from the
  sender's memory (Linux's cross-memory attach), which strace shows with the sender's
  process id and the bytes: every message as (sender rank, receiver rank, bytes). Shown
  on 2021.19 for allgather, alltoall and scatter's preset 3; gather's presets and
  scatter's 1 and 2 move no message that way (their blocks go through shared cells).
* egress(): Intel's shared-memory profiler (I_MPI_SHM=auto_profiler, one report per
  run) tables each rank's egress traffic per destination: (sender, receiver, bytes) with
  the number of messages, summed over the run (the fixture's barriers move none there).
  It sees gather's blocks too (tests/python/test_impi_schedules.py)."""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
from pathlib import Path

from mpi_programs import builder

SOURCE = Path(__file__).parent / "fixtures" / "cma_coll.c"
CMA = {"I_MPI_SHM_CMA": "1", "I_MPI_SHM_CMA_THRESHOLD": "1"}
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


def _launch(program: Path, collective: str, block: int, ranks: int, env: dict[str, str],
            prefix: list[str]) -> dict[int, int]:
    """Run the fixture (under `prefix`, e.g. strace); its ranks by process id."""
    from collkit.mpis import known
    install = known.find("impi").install()
    proc = subprocess.run([*prefix, *install.launch(ranks, program, [collective, str(block)])],
                          env={**install.environment(), **env}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Incorrect" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    rank_of = {int(pid): int(rank) for rank, pid in _PID.findall(proc.stdout)}
    bad = dict(_BAD.findall(proc.stdout))
    assert len(rank_of) == ranks and bad == {str(r): "0" for r in range(ranks)}, proc.stdout
    return rank_of


def messages(program: Path, collective: str, block: int, ranks: int, env: dict[str, str], tmp: Path
             ) -> collections.Counter:
    """The (sender, receiver, bytes) of every message of one call, with their counts."""
    log = tmp / "strace.txt"
    rank_of = _launch(program, collective, block, ranks, {**CMA, **env},
                      ["strace", "-f", "-qq", "-e", "trace=process_vm_readv", "-e", "signal=none", "-o", str(log)])
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


PROFILER = {"I_MPI_SHM": "auto_profiler"}
_REPORT = re.compile(r"^report: rank (\d+)$", re.MULTILINE)
_EGRESS = re.compile(r"^egress traffic:\n[^\n]*\n((?:\s+\d+\s+\d+\s+\d+\s+\w+\n)*)", re.MULTILINE)


def egress(program: Path, collective: str, block: int, ranks: int, env: dict[str, str], tmp: Path
           ) -> collections.Counter:
    """(sender, receiver, bytes summed over the run) -> messages, from Intel's profiler."""
    out = tmp / "shm-profile"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    _launch(program, collective, block, ranks, {**PROFILER, "I_MPI_SHM_PROFILER_DIRECTORY": str(out), **env}, [])
    text = "".join(f.read_text() for f in sorted(out.glob("*.txt")))
    starts = [(m.start(), int(m.group(1))) for m in _REPORT.finditer(text)]
    assert sorted(r for _, r in starts) == list(range(ranks)), text[-2000:]
    seen: collections.Counter = collections.Counter()
    for (at, rank), (end, _) in zip(starts, [*starts[1:], (len(text), -1)]):
        table = _EGRESS.search(text, at, end)
        for row in (table.group(1).splitlines() if table else []):
            nbytes, count, dest, _where = row.split()
            seen[(rank, int(dest), int(nbytes))] += int(count)
    return seen
