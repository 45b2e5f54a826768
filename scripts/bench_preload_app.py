"""The preload's application benchmark (docs/benchmarks.md): an unmodified
mpi4py program (tests/preload/app_collectives.py) under MPICH with the library's
own collectives against `collkit preload --rules FILE`, the rules tuned on this
machine. Runs alternate (plain, rules, plain, rules, ...) so slow drifts of a
shared machine fall on both alike; each run is one sample, the program's own
time for its steps (launch and MPI_Init excluded).

    .venv/bin/python scripts/bench_preload_app.py RULES [--pairs N] [--ranks P] [--steps S]

Prints each run, then per variant the median with its 95 % interval, the
ratio of medians with a bootstrap interval, and the Mann-Whitney p-value: a
difference is claimed only at p < 0.01, else it is a tie.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from collkit.analysis import stats
from collkit.library import mpi as mpilib

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "tests" / "preload" / "app_collectives.py"
SECONDS = re.compile(r"app_seconds=([0-9.]+) .*failures=0")


def run(argv: list[str], env: dict[str, str]) -> float:
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    found = SECONDS.search(res.stdout)
    if res.returncode != 0 or not found:
        tail = (res.stdout + res.stderr).strip().splitlines()[-5:]
        sys.exit(f"bench_preload_app: {' '.join(argv)} failed (exit {res.returncode}): " + " | ".join(tail))
    return float(found.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rules", type=Path, help="a collkit rules file (collkit tune --format collkit)")
    ap.add_argument("--pairs", type=int, default=8, help="runs of each variant (default 8)")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    if not a.rules.is_file():
        print(f"bench_preload_app: no rules file {a.rules}; make one with collkit tune --format collkit",
              file=sys.stderr)
        return 2
    mpich = mpilib.find("mpich")
    python = mpich.mpirun.parent / "python"     # the MPICH environment's, where mpi4py is
    launch = [str(mpich.mpirun), "-n", str(a.ranks), str(python), str(APP), str(a.steps)]
    variants = {
        "library": launch,
        "rules": [sys.executable, "-m", "collkit", "preload", "--mpi", "mpich",
                  "--rules", str(a.rules), "--", *launch],
    }
    env = mpich.environment()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(a.pairs):
        for name, argv in variants.items():
            t = run(argv, env)
            times[name].append(t)
            print(f"run {i + 1:2d} {name:8s} {t:.3f} s", flush=True)
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'variant':8s} {'median s':>9s} {'95% CI of median':>20s}  n")
    for name, xs in times.items():
        ci = stats.median_ci(xs)
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "(n < 6)"
        print(f"{name:8s} {_median(xs):9.3f} {ci_text:>20s}  {len(xs)}")
    _, p = stats.mann_whitney([times["library"]], [times["rules"]])
    lo, hi = stats.bootstrap_median_ratio([times["library"]], [times["rules"]])
    verdict = "tie" if p[0] >= stats.ALPHA else ("rules faster" if _median(times["rules"]) <
                                                   _median(times["library"]) else "rules slower")
    print(f"rules/library median ratio {_median(times['rules']) / _median(times['library']):.3f} "
          f"(95% bootstrap [{lo[0]:.3f}, {hi[0]:.3f}]), Mann-Whitney p = {p[0]:.4f}: {verdict}")
    return 0


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


if __name__ == "__main__":
    sys.exit(main())
