"""Which messages Open MPI's collectives sent, per peer: the pml `monitoring` component.

Open MPI 4.1 ships a pml wrapper (``--mca pml_monitoring_enable 2``) that counts
every point-to-point message per destination and, with
``pml_monitoring_enable_output`` and ``pml_monitoring_filename=F``, writes
``F.<rank>.prof`` at MPI_Finalize. With the value 2 ("filtered") the messages that
collectives generate internally are on their own lines::

    I<TAB>0<TAB>1<TAB>393228 bytes<TAB>31 msgs sent

(rank 0 sent rank 1 31 messages, 393228 bytes, from inside collectives). This is
how collkit shows that Open MPI really runs what a rules file chose: release
builds ignore a malformed rules file silently, so only the traffic, compared with
the traffic of the forced algorithm, proves the file was read and followed
(docs/tuning-files.md).

One collkit-bench point is run under monitoring with a fixed number of iterations,
so that everything else the benchmark sends (its synchronisation, its checks) is
the same in every run and any difference comes from the collective's algorithm."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from collkit.campaign.points import Point
from collkit.campaign.spec import Measure
from collkit.common.errors import UserError

# Fixed iterations: every run of one point sends the same benchmark traffic. No warm-up
# windows (their number depends on the times) and no launch warm-up: traffic, not time.
FIXED = Measure(warmup=1, min_iterations=3, max_iterations=3, time_budget_s=0.0, sync="mpi_barrier",
                validate="first", timeout_s=120.0, launch_warmup_s=0.0, settle_s=0.0)
MONITORING_ENV = {"OMPI_MCA_pml_monitoring_enable": "2", "OMPI_MCA_pml_monitoring_enable_output": "3"}

_LINE = re.compile(r"^I\t(\d+)\t(\d+)\t(\d+) bytes\t(\d+) msgs sent")


@dataclass(frozen=True)
class Traffic:
    # (sender, receiver) -> (messages, bytes) sent from inside collectives
    internal: dict[tuple[int, int], tuple[int, int]]
    record: dict      # collkit-bench's record of the point (status, reason, times)

    def messages(self) -> dict[tuple[int, int], int]:
        return {pair: n for pair, (n, _) in self.internal.items()}


def parse_prof(text: str) -> dict[tuple[int, int], tuple[int, int]]:
    """The `I` lines of one rank's .prof file."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for line in text.splitlines():
        if m := _LINE.match(line):
            src, dst, nbytes, msgs = (int(g) for g in m.groups())
            out[(src, dst)] = (msgs, nbytes)
    return out


def run_point(pm, point: Point, env: dict[str, str], timeout: float = 120.0) -> Traffic:
    """Run one point of collkit-bench under Open MPI (`pm`: a PlatformMPI) with
    `env` (forcing or a rules file) and monitoring on; its per-peer traffic."""
    # By family: Open MPI 5 (openmpi5) ships the same component beside Debian's 4.1
    if pm.install.family != "openmpi":
        raise UserError(f"pml monitoring is an Open MPI component; {pm.name} "
                        f"({pm.install.family or 'no known family'}) has none")
    with tempfile.TemporaryDirectory(prefix="collkit-monitor-") as tmp:
        folder = Path(tmp)
        points = folder / "one.points"
        points.write_text(point.to_line(FIXED) + "\n")
        out = folder / "out.jsonl"
        full = pm.install.environment()
        full.update(env)
        full.update(MONITORING_ENV)
        full["OMPI_MCA_pml_monitoring_filename"] = str(folder / "prof")
        cmd = pm.install.launch(point.ranks, pm.bench, ["--points", str(points), "--out", str(out)])
        try:
            proc = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise UserError(f"collkit-bench under monitoring did not finish within {timeout:g} s") from None
        records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        record = next((r for r in records if r.get("type") == "point"), None)
        if proc.returncode != 0 or record is None:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"collkit-bench under monitoring failed (exit status {proc.returncode}): {tail[0]}")
        internal: dict[tuple[int, int], tuple[int, int]] = {}
        for rank in range(point.ranks):
            prof = folder / f"prof.{rank}.prof"
            if not prof.exists():
                raise UserError(f"Open MPI wrote no {prof.name}: is the pml monitoring component installed "
                                "(ompi_info | grep monitoring)?")
            internal.update(parse_prof(prof.read_text()))
        return Traffic(internal, record)


def allreduce_point(ranks: int, nbytes: int, label: str, mpi: str = "openmpi") -> Point:
    """An int32 sum allreduce point for run_point (label: the record's algorithm; mpi: the
    known MPI's name the record carries)."""
    return Point(collective="allreduce", backend="mpi", mpi=mpi, algorithm=label, ranks=ranks,
                 count=nbytes // 4, bytes=nbytes, dtype="int32", op="sum", root=0, in_place=False)


__all__ = ["Traffic", "parse_prof", "run_point", "allreduce_point", "FIXED", "MONITORING_ENV"]
