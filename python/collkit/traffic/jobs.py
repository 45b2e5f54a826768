"""Many jobs at once: every allocation file of a directory, two algorithms.

Jobs are grouped by rank count so each trace is made (or read from the cache)
once and counted against every job of that size; the per-job work is a few
array operations (:func:`collkit.traffic.count.inter_group_bytes`)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.common.errors import UserError
from collkit.common.progress import Progress
from collkit.topology import Topology
from collkit.traffic.allocation import read_allocation
from collkit.traffic.analysis import placement_for, trace_key
from collkit.traffic.count import inter_group_bytes, reduction_pct
from collkit.traffic.trace import Trace, TraceFailure, rooted
from collkit.traffic.tracer import Tracer

# Show a progress bar from this many jobs on.
PROGRESS_FROM = 50
# Distinct rank counts whose traces are held at once.
SIZES_PER_ROUND = 32


@dataclass(frozen=True)
class JobRow:
    job: str
    ranks: int
    groups: int
    inter_group_n: tuple[float | None, ...]  # per algorithm, None where no trace could be made
    reduction_pct: float | None               # first vs second algorithm


@dataclass(frozen=True)
class _Job:
    name: str
    rank_group: np.ndarray


def job_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise UserError(f"--jobs {directory} is not a directory")
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise UserError(f"--jobs {directory} holds no allocation files")
    return files


def run_jobs(directory: Path, topo: Topology, collective: str, algorithms: list[str],
             tracer: Tracer, mode: str | None = None, ppn: int | None = None, root: int = 0,
             quiet: bool = False) -> list[JobRow]:
    files = job_files(directory)
    show = not quiet and len(files) >= PROGRESS_FROM
    bar = Progress(len(files), unit="jobs read") if show else None
    jobs: list[_Job] = []
    strays: list[str] = []
    for path in files:
        # A file that is not an allocation (a README, a note) is passed over and
        # named, not a reason to lose the other 9,999 jobs.
        try:
            placement = placement_for(read_allocation(path), topo, mode, ppn)
        except UserError as exc:
            strays.append(f"{path.name}: {exc}")
        else:
            jobs.append(_Job(path.stem, topo.node_group[placement.rank_node]))
        if bar:
            bar.advance()
    if bar:
        bar.finish()
    if not jobs:
        raise UserError(f"--jobs {directory} holds no readable allocation (first problem: {strays[0]})")
    if strays:
        print(f"collkit traffic: passed over {len(strays)} file{'s' if len(strays) > 1 else ''} of {directory} "
              f"that {'are' if len(strays) > 1 else 'is'} not an allocation (first: {strays[0]})", file=sys.stderr)

    by_size: dict[int, list[int]] = {}
    for i, job in enumerate(jobs):
        by_size.setdefault(job.rank_group.size, []).append(i)
    sizes = sorted(by_size)
    if rooted(collective) and root >= sizes[0]:
        raise UserError(f"--root {root} is not a rank of the smallest job ({sizes[0]} ranks)")

    rows: list[JobRow | None] = [None] * len(jobs)
    bar = Progress(len(jobs), unit="jobs") if show else None
    reported: set[str] = set()
    for start in range(0, len(sizes), SIZES_PER_ROUND):
        round_sizes = sizes[start:start + SIZES_PER_ROUND]
        keys = {(p, a): trace_key(collective, a, p, root, "pairs") for p in round_sizes for a in algorithms}
        if bar:
            bar.working_on(f"tracing p = {round_sizes[0]}..{round_sizes[-1]}")
        traces = tracer.get_many(keys.values())
        for p in round_sizes:
            found = [traces[keys[(p, a)]] for a in algorithms]
            for res in found:
                if isinstance(res, TraceFailure) and res.reason not in reported and bar:
                    reported.add(res.reason)
                    bar.note(f"no trace of {res.key.describe() if res.key else '?'}: {res.reason}")
            for i in by_size[p]:
                rows[i] = _row(jobs[i], found)
                if bar:
                    bar.advance()
    if bar:
        bar.finish()
    return [r for r in rows if r is not None]


def _row(job: _Job, found: list[Trace | TraceFailure]) -> JobRow:
    groups = int(np.unique(job.rank_group).size)
    inter: list[int | None] = []
    values: list[float | None] = []
    for res in found:
        if isinstance(res, Trace):
            b = inter_group_bytes(res, job.rank_group) if groups > 1 else 0
            inter.append(b)
            values.append(b / res.n if res.n else 0.0)
        else:
            inter.append(None)
            values.append(None)
    pct = None
    if len(inter) >= 2 and inter[0] is not None and inter[1] is not None:
        pct = reduction_pct(inter[0], inter[1])
    return JobRow(job.name, int(job.rank_group.size), groups, tuple(values), pct)


def format_number(x: float | None, digits: int = 6) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")
