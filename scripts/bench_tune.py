"""Time `collkit model` and `collkit tune` on a synthetic 10,000-point campaign
(docs/benchmarks.md): 3 collectives x 16 rank counts x 56 sizes x the default and
libcollkit algorithms, 30 iterations a point, times from known cost models.

    .venv/bin/python scripts/bench_tune.py [DIR]
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from collkit.tune import costs

ALGS = {"allgather": ["ring", "bruck", "recursive_doubling"],
        "allreduce": ["ring", "recursive_doubling", "rabenseifner"],
        "bcast": ["linear", "binomial_doubling", "binomial_halving", "scatter_allgather_ring"]}


def make(path: Path) -> int:
    path.mkdir(parents=True)
    (path / "spec.toml").write_text('name = "bench-tune"\n')
    (path / "resolved.json").write_text(json.dumps({"requested": {}, "points": [], "skipped": [],
                                                    "platform": {"name": "local"}}))
    rng = np.random.default_rng(7)
    n_rec = 0
    with open(path / "records.jsonl", "w") as f:
        for coll, algs in ALGS.items():
            for p in range(2, 18):
                for n in np.unique(np.geomspace(8, 8 << 20, 56).astype(int) // 8 * 8):
                    best = None
                    for alg in algs:
                        if costs.entry(coll, alg).exact == "pow2" and coll != "bcast" and p & (p - 1):
                            continue
                        t = costs.terms(coll, alg, p)
                        med = 2.0 * t.a + 0.0005 * t.b * n + 0.0003 * t.c * n
                        best = med if best is None else min(best, med)
                        for backend, name, m in (("collkit", alg, med),):
                            times = list(m * (1 + 0.02 * rng.standard_normal(30)))
                            f.write(json.dumps({"id": f"{coll}/{backend}/{name}/{p}/{n}", "collective": coll,
                                                "backend": backend, "mpi": "openmpi", "algorithm": name,
                                                "ranks": p, "count": int(n) // 4, "bytes": int(n), "status": "ok",
                                                "iterations": 30, "times_us": times,
                                                "stats_us": {"median": float(np.median(times))}}) + "\n")
                            n_rec += 1
                    times = list(1.3 * best * (1 + 0.02 * rng.standard_normal(30)))
                    f.write(json.dumps({"id": f"{coll}/mpi/default/{p}/{n}", "collective": coll, "backend": "mpi",
                                        "mpi": "openmpi", "algorithm": "default", "ranks": p, "count": int(n) // 4,
                                        "bytes": int(n), "status": "ok", "iterations": 30, "times_us": times,
                                        "stats_us": {"median": float(np.median(times))}}) + "\n")
                    n_rec += 1
    return n_rec


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="bench-tune-"))
    camp = root / "campaign"
    n = make(camp)
    exe = Path(sys.executable).parent / "collkit"
    for args in (["model", str(camp)],
                 ["tune", str(camp), "--format", "collkit", "--out", str(root / "rules.txt")]):
        t0 = time.perf_counter()
        subprocess.run([str(exe), *args], check=True, stdout=subprocess.DEVNULL)
        print(f"{n} points: collkit {args[0]}: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
