#!/usr/bin/env python3
"""`collkit traffic --jobs` of two checkouts side by side: the same 10,000
allocations (scripts/bench_traffic.sh makes them), each run with an empty
trace cache, alternately (A B A B ...), wall and CPU time of each. Used to show
that a change leaves the traffic batch's speed alone.

    scripts/bench_traffic_ab.py BEFORE_CHECKOUT AFTER_CHECKOUT [--rounds 3] [--jobs DIR]

Each checkout needs its own build/openmpi (ck_trace, registry.json); both run
under this checkout's .venv with PYTHONPATH pointing at their python/."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one(checkout: Path, jobs: str, nodes: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, PYTHONPATH=str(checkout / "python"), COLLKIT_TRACE_CACHE=cache)
        cmd = [str(ROOT / ".venv/bin/python"), "-m", "collkit", "traffic", "--jobs", jobs, "--map", nodes,
               "--collective", "allreduce", "--algorithm", "recursive_doubling", "--algorithm", "bine_latency",
               "--out", f"{out}/t.csv"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = os.times().elapsed
        subprocess.run(cmd, cwd=checkout, env=env, check=True, stderr=subprocess.DEVNULL)
        wall = os.times().elapsed - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="/tmp/collkit-traffic-jobs")
    ns = ap.parse_args()
    nodes = str(ROOT / "data/leonardo/nodes.txt")
    res: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    for r in range(ns.rounds):
        for side, checkout in (("before", ns.before), ("after", ns.after)):
            wall, cpu = one(checkout.resolve(), ns.jobs, nodes)
            res[side].append((wall, cpu))
            print(f"round {r + 1} {side}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in res.items()}
    for s, (w, c) in med.items():
        print(f"{s}: median {w:.1f} s wall, {c:.1f} s CPU")
    print(f"after/before: wall {med['after'][0] / med['before'][0]:.3f}, CPU {med['after'][1] / med['before'][1]:.3f}")
    # Each round ran the two side by side: its own ratio is the fairer comparison.
    paired = sorted(a[1] / b[1] for a, b in zip(res["after"], res["before"]))
    print(f"paired CPU ratios after/before per round: median {statistics.median(paired):.3f}, "
          f"range {paired[0]:.3f}-{paired[-1]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
