#!/usr/bin/env python3
"""Two builds of collkit-bench on one fixed set of points, side by side.

Runs build A and build B alternately (A B A B ..., ROUNDS times each) with the
same points file under the same mpirun, so that drift of the machine hits both
alike, and prints per point the ratio of medians B/A (the median over rounds of
each round's median) and overall the median ratio with its spread. Used to show
that a change to collkit-bench or libcollkit leaves measured times alone.

    scripts/bench_two_builds.py A/collkit-bench B/collkit-bench [--ranks 2] [--rounds 5]

Timings, not a test: the numbers go into docs/benchmarks.md with the command."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# allreduce and bcast, libcollkit and the library, 8 B .. 1 MiB: the shapes
# whose timing loop, fill and validation the structure work touched.
ALGORITHMS = {"allreduce": ["ring", "recursive_doubling", "rabenseifner", "bine_bandwidth", "default"],
              "bcast": ["binomial_doubling", "bine", "scatter_allgather_ring", "default"]}
COUNTS = [2, 64, 2048, 65536, 262144]  # int32 elements: 8 B .. 1 MiB


def points_file(path: Path) -> None:
    lines = []
    for coll, algs in ALGORITHMS.items():
        for count in COUNTS:
            for alg in algs:
                backend = "mpi" if alg == "default" else "collkit"
                lines.append(f"id={coll}/{alg}/{count} collective={coll} backend={backend} algorithm={alg} "
                             f"count={count} dtype=int32 op=sum root=0 in_place=0 warmup=2 min_iters=20 "
                             f"max_iters=2000 budget_s=0.05 sync=dissemination validate=first")
    path.write_text("\n".join(lines) + "\n")


def run(bench: str, points: Path, out: Path, ranks: int) -> dict[str, float]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(["mpirun.openmpi", "-n", str(ranks), bench, "--points", str(points), "--out", str(out)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    medians = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("status") == "ok":
            medians[rec["id"]] = rec["stats_us"]["median"]
    return medians


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        points = Path(tmp) / "points.txt"
        points_file(points)
        runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
        for r in range(ns.rounds):
            for side, bench in (("a", ns.a), ("b", ns.b)):
                runs[side].append(run(bench, points, Path(tmp) / f"{side}{r}.jsonl", ns.ranks))
            print(f"round {r + 1}/{ns.rounds} done", file=sys.stderr)
    ratios = {}
    for pid in runs["a"][0]:
        a = [m[pid] for m in runs["a"] if pid in m]
        b = [m[pid] for m in runs["b"] if pid in m]
        if len(a) == len(b) == ns.rounds:
            ratios[pid] = statistics.median(b) / statistics.median(a)
    for pid, r in sorted(ratios.items()):
        print(f"{pid:45s} {r:6.3f}")
    vals = sorted(ratios.values())
    q = statistics.quantiles(vals, n=4)
    print(f"{len(vals)} points, ratio B/A of medians: median {statistics.median(vals):.3f}, "
          f"quartiles {q[0]:.3f}-{q[2]:.3f}, min {vals[0]:.3f}, max {vals[-1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
