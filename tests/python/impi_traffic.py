"""What one collective call moves under Intel MPI on one node, seen from outside the
algorithm, two ways (fixtures/cma_coll.c prints each rank's pid and checks its result):

* messages(): with I_MPI_SHM_CMA=1 and a CMA threshold of 1 byte, Intel's shared-memory
  transport moves each large message by process_vm_readv of the receiver from the
  sender's memory (Linux's cross-memory attach), which strace shows with the sender's
  process id, the sender's address and the bytes: every message as (sender rank, receiver
  rank, bytes). Shown on 2021.19 for allgather, alltoall and scatter's preset 3; gather's
  presets and scatter's 1 and 2 move no message that way (their blocks go through shared
  cells). Usually one read a message; on a loaded host Intel sometimes reads one message
  in pieces (a 128 KiB alltoall message as two 64 KiB reads of consecutive addresses,
  seen in 1 of 3 runs beside 4 busy loops, 2026-11-30), so a read that continues the
  same receiver's previous read of the same sender where it ended is the same message.
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
# the sender's side, the call's last argument list: "[{iov_base=0xADDR, iov_len=N}], 1, 0) = BYTES"
_REMOTE = re.compile(r"\[\{iov_base=(0x[0-9a-f]+), iov_len=\d+\}\], 1, 0\) = \d+$")
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
    # per receiving pid: its last message (sender, bytes) and where in the sender it ended
    last: dict[int, tuple[int, int, int]] = {}
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
        if nbytes <= START_UP_BYTES:
            continue
        sender = rank_of[peer[pid]]
        remote = _REMOTE.search(line)
        at = int(remote.group(1), 16) if remote else None
        before = last.get(pid)
        if at is not None and before is not None and before[0] == sender and before[2] == at:
            seen[(sender, rank_of[pid], before[1])] -= 1      # a piece of the same message
            nbytes += before[1]
        seen[(sender, rank_of[pid], nbytes)] += 1
        end = at + int(done.group(1)) if at is not None else -1
        last[pid] = (sender, nbytes, end)
    return +seen        # without the counts the merged pieces emptied


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
