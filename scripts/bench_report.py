#!/usr/bin/env python3
"""How long `collkit report --html` takes on a large campaign, and how big the file is.

    .venv/bin/python scripts/bench_report.py [--points 10000] [--keep DIR] [--browser]

Writes a synthetic campaign (2 collectives x 2 MPI libraries x 4 rank counts x 25 sizes
x 25 algorithms = 10,000 ok points with 40 iterations each, a library default among
them, and a few failed and skipped points), then times `collkit report DIR --html`
(wall clock and CPU time of the command, median of --repeat runs) and reports the file's size.
--browser also times Chromium opening it (headless, --dump-dom, so the whole page is
parsed and its script run; wall clock of the process, start-up included, beside the same
for about:blank: the difference is the report's own cost).
The synthetic times are random (fixed seed): they exercise the report, nothing else."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTIVES = ("allreduce", "bcast")
MPIS = ("openmpi", "mpich")
RANKS = (2, 4, 8, 16)
SIZES = tuple(8 << i for i in range(25))          # 8 B .. 128 MiB


def write_campaign(d: Path, points: int, iterations: int = 40) -> int:
    """A campaign directory as `collkit run` leaves it (spec, resolved, state, metadata, records)."""
    rng = random.Random(20261124)
    per_cell = max(2, points // (len(COLLECTIVES) * len(MPIS) * len(RANKS) * len(SIZES)))
    algs = ["default"] + [f"alg{i:02d}" for i in range(per_cell - 1)]
    d.mkdir(parents=True)
    recs, planned = [], []
    for coll in COLLECTIVES:
        for mpi in MPIS:
            for p in RANKS:
                for n in SIZES:
                    for k, alg in enumerate(algs):
                        backend = "mpi" if alg == "default" else "collkit"
                        pid = f"{coll}/{backend}/{mpi}/{alg}/p{p}/{n}B/int32/sum/r0/outofplace"
                        base = (5.0 + n / 2e3) * (1.0 + 0.15 * ((k * 7 + p) % 11))
                        times = [base * rng.lognormvariate(0.0, 0.05) for _ in range(iterations)]
                        st = sorted(times)
                        status = "failed" if k == 3 and n == SIZES[-1] else "ok"
                        rec = {"id": pid, "collective": coll, "backend": backend, "mpi": mpi, "algorithm": alg,
                               "ranks": p, "count": max(1, n // 4), "bytes": n, "dtype": "int32", "op": "sum",
                               "root": 0, "in_place": False, "status": status, "iterations": iterations,
                               "times_us": times if status == "ok" else [],
                               "stats_us": {"min": st[0], "median": statistics.median(st), "max": st[-1],
                                            "p5": st[len(st) // 20], "p95": st[-1 - len(st) // 20]}
                               if status == "ok" else {},
                               "algbw_GBps": n / st[len(st) // 2] / 1e3, "busbw_GBps": n / st[len(st) // 2] / 1e3,
                               "sync": "dissemination", "label": f"{mpi if backend == 'mpi' else 'collkit'}:{alg}"}
                        if status != "ok":
                            rec.update(reason="synthetic failure: the point timed out", iterations=0)
                        recs.append(rec)
                        planned.append({"id": pid})
    (d / "spec.toml").write_text('name = "synthetic"\n')
    (d / "resolved.json").write_text(json.dumps({"requested": {"name": "synthetic", "description":
                                                              f"{len(recs)} synthetic points"},
                                                "points": planned, "skipped": []}))
    (d / "state.json").write_text(json.dumps({"status": "complete", "created": "2026-11-24T00:00:00+00:00"}))
    (d / "metadata.json").write_text(json.dumps({"machine": {"hostname": "synthetic"}, "collkit": {}}))
    with open(d / "records.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    return len(recs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the campaign here and keep it")
    ap.add_argument("--browser", action="store_true", help="also time headless Chromium opening the report")
    ns = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="collkit-bench-report-"))
    d = ns.keep or tmp / "synthetic"
    try:
        n = write_campaign(d, ns.points)
        out = tmp / "report.html"
        walls, cpus = [], []
        for _ in range(ns.repeat):
            t0 = time.monotonic()
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            res = subprocess.run([sys.executable, "-m", "collkit", "report", str(d), "--html", "--out", str(out)],
                                 capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
            if res.returncode != 0:
                print(res.stderr, file=sys.stderr)
                return 1
        print(f"{n} points: report written in {statistics.median(walls):.1f} s (median of {len(walls)}: "
              f"{', '.join(f'{w:.1f}' for w in walls)}), CPU {statistics.median(cpus):.1f} s, "
              f"{out.stat().st_size / 1e6:.2f} MB; load average {os.getloadavg()[0]:.1f}")
        if ns.browser:
            chromium = shutil.which("chromium")
            if not chromium:
                print("no chromium on PATH: browser timing skipped")
                return 0
            def opening(url: str) -> float:
                t0 = time.monotonic()
                # --virtual-time-budget: return once the page is idle (load done, script run)
                subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                                "--dump-dom", url], capture_output=True, timeout=300)
                return time.monotonic() - t0
            blank, opens = [], []
            for _ in range(ns.repeat):
                blank.append(opening("about:blank"))
                opens.append(opening(out.as_uri()))
            print(f"chromium --headless --dump-dom: report {statistics.median(opens):.1f} s, about:blank "
                  f"{statistics.median(blank):.1f} s (medians of {len(opens)}: "
                  f"{', '.join(f'{w:.1f}' for w in opens)} / {', '.join(f'{w:.1f}' for w in blank)}); "
                  f"load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
