"""fixtures/op_log.c, built with an MPI's own wrapper, and its output read: the
reduction lengths each rank made inside one collective call (the shape of the schedule
the library ran), per communicator ("world", "dup") and rank."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from mpi_programs import builder

SOURCE = Path(__file__).parent / "fixtures" / "op_log.c"
_RECORD = re.compile(r"(world|dup) rank (\d+) rc (\d+) bad (\d+) lens((?: \d+)*)")


def program(tmp_path_factory):
    """get(mpi) -> op_log built with that MPI (once per test module)."""
    return builder(tmp_path_factory, SOURCE)


def run(program: Path, mpi: str, ranks: int, args: list[str], env: dict[str, str] | None = None
        ) -> tuple[subprocess.CompletedProcess, dict[tuple[str, int], list[int]]]:
    """Launch it; the lengths per (communicator, rank). Every record must say MPI_SUCCESS
    and a right result."""
    from collkit.mpis import known
    install = known.find(mpi).install()
    proc = subprocess.run(install.launch(ranks, program, args), env={**install.environment(), **(env or {})},
                          capture_output=True, text=True, timeout=120)
    calls = {}
    # hydra may forward one rank's line in pieces, between another's: match records, not lines
    for where, rank, rc, bad, lens in _RECORD.findall(proc.stdout):
        assert (rc, bad) == ("0", "0"), proc.stdout
        calls[(where, int(rank))] = [int(x) for x in lens.split()]
    return proc, calls
