"""`collkit check`: launch the correctness matrix and summarise it.

The matrix itself is the C program tests/matrix.c (ck_matrix), built against
each MPI; this module launches it once per rank count, streams its progress,
parses its per-algorithm lines and prints one table."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from collkit.common.errors import UserError
from collkit.common.table import render
from collkit.launch import watch
from collkit.mpis import known
from collkit.mpis.install import MPIInstall
from collkit.library.registry import Algorithm

LEVELS = ("quick", "standard", "full")


@dataclass
class AlgResult:
    collective: str
    name: str
    passed: int = 0
    failed: int = 0
    refused: int = 0


@dataclass
class LaunchResult:
    ranks: int
    exit_code: int
    passed: int = 0
    failed: int = 0
    algorithms: dict[str, AlgResult] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.failed == 0 and not self.timed_out


def matrix_program(mpi: str) -> Path:
    return known.find(mpi).part("matrix")


def parse_output(ranks: int, exit_code: int, stdout: str) -> LaunchResult:
    res = LaunchResult(ranks=ranks, exit_code=exit_code)
    for line in stdout.splitlines():
        if line.startswith("FAIL "):
            res.failures.append(line[5:])
        elif line.startswith("ALG "):
            parts = line.split()
            if len(parts) == 6:
                coll, name = parts[1], parts[2]
                res.algorithms[f"{coll}/{name}"] = AlgResult(
                    coll, name, int(parts[3]), int(parts[4]), int(parts[5]))
        elif line.endswith(" failed") and " passed, " in line:
            head, tail = line.split(" passed, ")
            try:
                res.passed, res.failed = int(head.split()[-1]), int(tail.split()[0])
            except ValueError:
                pass
    return res


def _progress(tail: list[str], label: str, show: bool):
    """What to do with each stderr line of ck_matrix: keep the last 20, show its progress."""
    def line_(line: str) -> None:
        tail.append(line)
        del tail[:-20]
        if show and line.startswith("ck_matrix: "):
            msg = f"{label}: {line[len('ck_matrix: '):]}"
            sys.stderr.write("\r\033[K" + msg[:100])
            sys.stderr.flush()
    return line_


def launch(mpi: MPIInstall, ranks: int, algs: list[Algorithm], level: str,
           timeout: float) -> LaunchResult:
    args = ["--level", level]
    for a in algs:
        args += ["--algorithm", a.qualified]
    cmd = mpi.launch(ranks, matrix_program(mpi.name), args)
    show = sys.stderr.isatty()
    label = f"{mpi.name} p={ranks}"
    if not show:
        print(f"running the matrix under {mpi.name} at {ranks} ranks ...", file=sys.stderr, flush=True)
    tail: list[str] = []
    # the launch layer of `collkit run`: own process group, killed whole at the timeout
    done = watch.run_captured(cmd, mpi.environment(), timeout, _progress(tail, label, show))
    if show:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
    res = parse_output(ranks, done.code, done.stdout)
    res.timed_out = done.timed_out
    res.stderr_tail = tail
    return res


def summarise(mpi: str, results: list[LaunchResult], algs: list[Algorithm]) -> tuple[str, int, int]:
    totals: dict[str, AlgResult] = {a.qualified: AlgResult(a.collective, a.name) for a in algs}
    broken: set[str] = set()
    for res in results:
        for key, r in res.algorithms.items():
            t = totals.setdefault(key, AlgResult(r.collective, r.name))
            t.passed += r.passed
            t.failed += r.failed
            t.refused += r.refused
        if not res.ok and not res.algorithms:
            broken.add(str(res.ranks))
    rows = []
    for key, t in totals.items():
        status = "FAIL" if t.failed else ("PASS" if t.passed else "NOT RUN")
        rows.append([t.collective, t.name, str(t.passed + t.failed), str(t.failed), str(t.refused), status])
    ranks = ",".join(str(r.ranks) for r in results)
    table = render(["collective", "algorithm", "cases", "failed", "refused", "result"], rows,
                   right={2, 3, 4})
    passed = sum(t.passed for t in totals.values())
    failed = sum(t.failed for t in totals.values())
    header = f"correctness matrix under {mpi}, ranks {ranks}"
    return f"{header}\n{table}", passed, failed


def run(mpi: MPIInstall, ranks: list[int], algs: list[Algorithm], level: str, timeout: float) -> int:
    results = [launch(mpi, p, algs, level, timeout) for p in ranks]
    text, passed, failed = summarise(mpi.name, results, algs)
    for res in results:
        for line in res.failures:
            print(f"FAIL p={res.ranks}: {line}")
    print(text)
    crashed = [r for r in results if not r.ok and (r.timed_out or r.failed == 0)]
    for r in crashed:
        why = f"timed out after {timeout:g} s" if r.timed_out else f"exited with status {r.exit_code}"
        print(f"matrix at {r.ranks} ranks under {mpi.name} {why}; last output:", file=sys.stderr)
        for line in r.stderr_tail[-10:]:
            print(f"  {line}", file=sys.stderr)
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
