#!/usr/bin/env python3
"""Speed benchmark of `collkit compare`: two synthetic campaigns of 10,000 points with
50 iterations each (NEW: one algorithm 10 % slower), compared with the table output.

    .venv/bin/python scripts/bench_compare.py [--points N] [--iterations K] [--keep DIR]

Prints the wall time of `collkit compare BASE NEW` (in-process, output discarded),
the best of three runs, and of one run of the whole command in a fresh interpreter."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

COLLECTIVES = ("allreduce", "allgather", "bcast", "reduce_scatter", "alltoall")
ALGORITHMS = ("ring", "recursive_doubling", "bine", "binomial", "default")


def synthesise(d: Path, points: int, iterations: int, seed: int, slow: str | None = None) -> None:
    """A campaign directory with `points` ok records, lognormal iteration times."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "spec.toml").write_text('name = "bench-compare"\n')
    rng = np.random.default_rng(seed)
    lines, n = [], 0
    sizes = [64 * (i + 1) for i in range(points // (len(COLLECTIVES) * len(ALGORITHMS) * 4) + 1)]
    for coll in COLLECTIVES:
        for alg in ALGORITHMS:
            for ranks in (2, 4, 8, 16):
                for size in sizes:
                    if n == points:
                        break
                    base = 2.0 + size / 1e3 * ranks ** 0.5
                    t = base * rng.lognormal(0.0, 0.05, iterations) * (1.1 if alg == slow else 1.0)
                    backend = "mpi" if alg == "default" else "collkit"
                    lines.append(json.dumps({
                        "id": f"p{n}", "collective": coll, "backend": backend, "mpi": "openmpi", "algorithm": alg,
                        "ranks": ranks, "count": size // 4, "bytes": size, "dtype": "int32", "op": "sum",
                        "root": 0, "in_place": False, "status": "ok", "reason": "", "iterations": iterations,
                        "sync": "dissemination", "times_us": [round(float(v), 3) for v in t],
                        "stats_us": {"min": float(t.min()), "median": float(np.median(t)), "max": float(t.max()),
                                     "p5": float(np.percentile(t, 5)), "p95": float(np.percentile(t, 95))},
                        "algbw_GBps": 0.0, "busbw_GBps": 0.0}))
                    n += 1
    (d / "resolved.json").write_text(json.dumps({"points": [], "skipped": []}))
    (d / "records.jsonl").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--keep", type=Path, help="write the campaigns here and keep them")
    ns = ap.parse_args()
    root = ns.keep or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    base, new = root / "base", root / "new"
    synthesise(base, ns.points, ns.iterations, 1)
    synthesise(new, ns.points, ns.iterations, 2, slow="bine")
    from collkit import cli
    best = cpu = float("inf")
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main(["compare", str(base), str(new)])
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    t0 = time.perf_counter()
    before = os.times()
    subprocess.run([sys.executable, "-m", "collkit", "compare", str(base), str(new)], check=True,
                   stdout=subprocess.DEVNULL)
    after = os.times()
    whole = time.perf_counter() - t0
    child = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    print(f"{ns.points} points x {ns.iterations} iterations per campaign (exit {rc}): in process {best:.2f} s "
          f"wall, {cpu:.2f} s CPU (best of 3); as a command in a fresh interpreter {whole:.2f} s wall, "
          f"{child:.2f} s CPU; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
