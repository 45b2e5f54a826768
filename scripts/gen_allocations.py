#!/usr/bin/env python3
"""Synthetic Slurm allocations on the Leonardo map, for the traffic benchmark.

We have only six real Leonardo allocations (data/leonardo/alloc_*.csv),
so the 10,000-job benchmark draws its own, deterministically (fixed seed):

* job size: log-uniform between --min and --max nodes (2 and 2,048): as many
  jobs of 2-4 nodes as of 1,024-2,048, which is how job sizes on large
  machines tend to spread; size = floor(2^u), u uniform in [log2 min, log2 max + 1),
  capped at max;
* the machine: the nodes of one partition (default 1, Leonardo's booster,
  3,456 nodes), in node-id order, cut into runs of geometric length (mean
  --run nodes, like the blocks other jobs hold); each run is busy with
  probability b, b uniform in [0.5, 0.95] per job, so the free nodes form runs
  with gaps, as on a busy machine. Where fewer than the job's size are free,
  busy runs are freed at random until enough are;
* the job (collkit.simulation.draw, shared with drawn simulated allocations):
  like Slurm's first fit, the next `size` free nodes in id order from a
  random free node (wrapping round); then a fraction s of them, s uniform in
  [0, 0.2], is swapped for random other free nodes (the scatter that real
  allocations show);
* the file: PICO CSV (``MPI_Rank,allocation``), one node per rank, nodes sorted
  by id, host names ``lrdnNNNN.leonardo.local`` as in the real files.

Usage: gen_allocations.py --out DIR [--jobs 10000] [--seed 20250101]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from collkit.simulation import draw  # noqa: E402
from collkit.topology import read_map  # noqa: E402


def partition_nodes(map_path: Path, partition: str) -> list[str]:
    """Host names (lrdnNNNN) of one partition, in node-id order."""
    read_map(map_path)  # validates the map
    names = []
    for line in map_path.read_text().splitlines():
        tokens = line.split()
        fields = {tokens[i].upper(): tokens[i + 1] for i in range(0, len(tokens) - 1, 2)}
        if fields.get("PARTITION") == partition and "NODE" in fields:
            names.append("lrdn" + fields["NODE"])
    return sorted(names)


def job_size(rng: np.random.Generator, lo: int, hi: int) -> int:
    u = rng.uniform(np.log2(lo), np.log2(hi) + 1)
    return int(min(hi, max(lo, np.floor(2 ** u))))


def allocate(rng: np.random.Generator, n: int, size: int, mean_run: float) -> np.ndarray:
    # b drawn per job before the runs, the scatter range after the start: the
    # order of draws that made the benchmark's committed job sets
    busy_prob = rng.uniform(0.5, 0.95)
    free = draw.free_mask(rng, n, size, mean_run, busy_prob)
    return draw.first_fit(rng, free, size, (0.0, 0.2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="directory to write job files into")
    ap.add_argument("--map", type=Path, default=REPO / "data" / "leonardo" / "nodes.txt")
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=20250101)
    ap.add_argument("--min", type=int, default=2)
    ap.add_argument("--max", type=int, default=2048)
    ap.add_argument("--partition", default="1")
    ap.add_argument("--run", type=float, default=8.0, help="mean length of busy/free runs (nodes)")
    ns = ap.parse_args()

    names = partition_nodes(ns.map, ns.partition)
    if ns.max > len(names):
        print(f"partition {ns.partition} has {len(names)} nodes, fewer than --max {ns.max}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(ns.seed)
    ns.out.mkdir(parents=True, exist_ok=True)
    width = len(str(ns.jobs - 1))
    for j in range(ns.jobs):
        size = job_size(rng, ns.min, ns.max)
        nodes = allocate(rng, len(names), size, ns.run)
        rows = "".join(f"{r},{names[i]}.leonardo.local\n" for r, i in enumerate(nodes))
        (ns.out / f"job{j:0{width}d}.csv").write_text("MPI_Rank,allocation\n" + rows)
    print(f"{ns.jobs} allocations of {ns.min}..{ns.max} nodes in {ns.out} (seed {ns.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
