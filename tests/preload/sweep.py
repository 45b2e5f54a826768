#!/usr/bin/env python3
"""Run a program under libcollkit-preload with every libcollkit algorithm of
each collective it calls forced in turn, at each rank count, and check that it
passes and that the preload's report shows the calls on that algorithm (or
counted fallbacks to the library). Used by ctest (p = 1, 3, 4) and by
`make check-preload-full` (scripts/check_preload_full.sh). Standard library only.

    sweep.py --mpi openmpi --mpirun M --preload LIB --registry JSON --ranks 1,3,4
             --program matrix|fortran_use_mpi|fortran_mpif|fortran_f08|hpcc|mpi4py -- CMD...

With --autotune, one run per rank count under COLLKIT_AUTOTUNE=1 instead: the
program's calls spread over every candidate of their classes (issue #42);
it must pass (no wrong result, no hang), rank 0 must have written the rules,
and for the programs that call every collective in many classes (CALLS_ALL)
each collective must have run on the library and on at least one libcollkit
algorithm.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The collectives each known program calls: only those are swept.
ALL = ["bcast", "reduce", "gather", "scatter", "allgather", "reduce_scatter", "allreduce", "alltoall"]
PROGRAMS = {
    "matrix": ALL,
    "fortran_use_mpi": ["allreduce", "bcast", "alltoall"],
    "fortran_mpif": ["allreduce", "bcast", "alltoall"],
    "fortran_f08": ALL,
    "hpcc": ["bcast", "reduce", "allreduce", "alltoall", "allgather", "gather", "scatter"],
    "mpi4py": ALL,
    "significance": ALL,
}
# Programs that call every collective of their list at every rank count: even
# in --together rounds, each forced algorithm must show its calls (or counted
# fallbacks where it never runs), so a binding whose calls bypass the shim fails.
CALLS_ALL = {"matrix", "fortran_use_mpi", "fortran_mpif", "fortran_f08"}


def constraint_free(alg: dict) -> bool:
    c = alg.get("constraints", {})
    return not any(v for k, v in c.items() if k != "min_count") and not c.get("min_count")


def never_runs(alg: dict, p: int) -> bool:
    """The shim sends every call of this algorithm to the library at p: a
    constraint it cannot check (a topology), or power-of-two ranks."""
    c = alg.get("constraints", {})
    unchecked = any(v for k, v in c.items() if k not in ("commutative_op", "pow2_ranks", "min_count"))
    return unchecked or (bool(c.get("pow2_ranks")) and p & (p - 1) != 0)


def env_flags(mpi: str, env: dict[str, str]) -> list[str]:
    flags: list[str] = []
    for key, value in env.items():
        flags += ["-x", f"{key}={value}"] if mpi == "openmpi" else ["-genv", key, value]
    return flags


def report_counts(text: str, coll: str, alg: str) -> tuple[int, int]:
    """Calls on (coll, alg) and fallbacks counted against it, from a report."""
    calls = fallbacks = 0
    in_fallbacks = False
    for line in text.splitlines():
        if line.startswith("fallbacks to the library:"):
            in_fallbacks = True
            continue
        f = line.split()
        if len(f) < 4 or f[0] != coll or f[1] != alg:
            continue
        if in_fallbacks and f[-1].isdigit():
            fallbacks += int(f[-1])
        elif not in_fallbacks and len(f) == 5 and f[2].isdigit():
            calls += int(f[2])
    return calls, fallbacks


# hpcc's input (its documented HPL.dat-style format), small enough for a 2-core
# machine: one HPL problem of N = 200, a P x Q grid of all ranks.
HPCC_INPUT = """HPLinpack benchmark input file
collkit preload sweep
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
200          Ns
1            # of NBs
32           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{P}            Ps
{Q}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
"""


def hpcc_prepare(run_dir: Path, p: int) -> None:
    rows = 2 if p % 2 == 0 and p >= 4 else 1
    (run_dir / "hpccinf.txt").write_text(HPCC_INPUT.format(P=rows, Q=p // rows))


def hpcc_verdict(run_dir: Path) -> str | None:
    """Why hpcc's own checks failed, or None: HPL's residual checks, PTRANS's
    element checks, the FFT error, the summary's Success flag."""
    out = run_dir / "hpccoutf.txt"
    if not out.exists():
        return "no hpccoutf.txt"
    text = out.read_text(errors="replace")
    if "Success=1" not in text:
        return "hpcc summary has no Success=1"
    for line in text.splitlines():
        f = line.split()
        if "failed residual checks" in line and f and f[0] != "0":
            return line.strip()
        if line.startswith("Found ") and len(f) > 1 and f[1] != "0":
            return line.strip()
        if line.startswith("MPIFFT_maxErr=") and float(line.split("=")[1]) > 1e-6:
            return line.strip()
    return None


def launch(a: argparse.Namespace, argv: list[str], cwd: str, what: str) -> bool:
    """One run of the program in its own session; False (and a FAIL line) when it
    timed out or exited non-zero."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout, cwd=cwd,
                             start_new_session=True)
    except subprocess.TimeoutExpired:
        print(f"FAIL {what}: timed out after {a.timeout:.0f} s", flush=True)
        return False
    if res.returncode != 0:
        tail = (res.stdout + res.stderr).strip().splitlines()[-8:]
        print(f"FAIL {what}: exit {res.returncode}\n  " + "\n  ".join(tail), flush=True)
        return False
    return True


def run_one(a: argparse.Namespace, job: list[tuple[str, dict]], labels: dict[str, str], p: int) -> bool:
    forced = ",".join(f"{c}={alg['name']}" for c, alg in job)
    what = f"{a.program} {forced} p={p}"
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        report = run_dir / "report.txt"
        env = {"LD_PRELOAD": a.preload, "COLLKIT_ALGORITHMS": forced, "COLLKIT_REPORT": str(report)}
        if "COLLKIT_FATTREE" in os.environ:
            env["COLLKIT_FATTREE"] = os.environ["COLLKIT_FATTREE"]
        cmd = list(a.cmd)
        if a.program == "matrix":
            # the matrix calls each collective of the job through its label (an
            # algorithm without constraints) and the shim runs the forced one instead
            cmd += ["--level", "quick", "--no-invalid"]
            for coll, _ in job:
                cmd += ["--algorithm", f"{coll}/{labels[coll]}"]
            for coll, alg in job:
                if alg.get("traits", {}).get("fp_rank_variant"):
                    # the label has no trait, the forced algorithm runs: its float sums may
                    # differ across ranks (within the bound the matrix still checks)
                    cmd.append(f"--fp-rank-variant={coll}")
        if a.program == "hpcc":
            hpcc_prepare(run_dir, p)
        argv = [a.mpirun, "-n", str(p)]
        if a.mpi == "openmpi":
            argv.append("--oversubscribe")
        argv += env_flags(a.mpi, env) + cmd
        if not launch(a, argv, tmp, what):
            return False
        if a.program == "hpcc":
            why = hpcc_verdict(run_dir)
            if why:
                print(f"FAIL {what}: {why}", flush=True)
                return False
        text = report.read_text() if report.exists() else ""
        seen = []
        ran_any = False
        for coll, alg in job:
            calls, fallbacks = report_counts(text, coll, alg["name"])
            ran_any = ran_any or calls > 0
            explained = calls > 0 or (fallbacks > 0 and never_runs(alg, p))
            # In --together rounds a program may skip a collective at some p
            # (hpcc at p = 1); a lone forced algorithm must show its calls,
            # as must each of a CALLS_ALL program.
            if not explained and (not a.together or a.program in CALLS_ALL):
                print(f"FAIL {what}: the report shows no call on {alg['name']}\n{text}", flush=True)
                return False
            seen.append(f"{coll}={alg['name']}:{calls}c/{fallbacks}f")
        if not ran_any and not all(never_runs(x, p) for _, x in job):
            print(f"FAIL {what}: the report shows no call on any forced algorithm\n{text}", flush=True)
            return False
        print(f"ok   {what}: " + " ".join(seen), flush=True)
        return True


def run_autotune(a: argparse.Namespace, colls: list[str], labels: dict[str, str], p: int) -> bool:
    what = f"{a.program} autotune p={p}"
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        report, rules = run_dir / "report.txt", run_dir / "learned.rules"
        env = {"LD_PRELOAD": a.preload, "COLLKIT_AUTOTUNE": "1", "COLLKIT_AUTOTUNE_OUT": str(rules),
               "COLLKIT_REPORT": str(report), "COLLKIT_AUTOTUNE_AFTER": "0"}   # explore from the first call
        if a.mpi == "mpich":    # MPICH's own algorithms too (switched per call; offered only when named)
            env["COLLKIT_AUTOTUNE_CANDIDATES"] = ";".join(f"{c}=*,library:*" for c in ALL)
        cmd = list(a.cmd)
        if a.program == "matrix":
            # through each collective's label (no constraints): the autotuner picks the algorithm
            cmd += ["--level", "quick", "--no-invalid"]
            for coll in colls:
                cmd += ["--algorithm", f"{coll}/{labels[coll]}"]
        argv = [a.mpirun, "-n", str(p)] + (["--oversubscribe"] if a.mpi == "openmpi" else [])
        argv += env_flags(a.mpi, env) + cmd
        if not launch(a, argv, tmp, what):
            return False
        text = report.read_text() if report.exists() else ""
        ran: dict[str, set[str]] = {c: set() for c in colls}
        for line in text.splitlines():
            if line.startswith("fallbacks to the library:"):
                break
            f = line.split()
            if len(f) == 5 and f[0] in ran and f[2].isdigit() and int(f[2]) > 0:
                ran[f[0]].add(f[1])
        # The matrix calls each collective in dozens of classes: each must have explored.
        # Programs with a call or two a class (significance) show only that nothing hangs.
        thin = [c for c, names in ran.items() if "library" not in names or len(names) < 2]
        if thin and a.program in CALLS_ALL:
            print(f"FAIL {what}: no exploration of {', '.join(thin)} (library and an algorithm)\n{text}",
                  flush=True)
            return False
        if not rules.exists() or "collkit rules v1" not in rules.read_text():
            print(f"FAIL {what}: rank 0 wrote no rules to {rules.name}", flush=True)
            return False
        print(f"ok   {what}: " + " ".join(f"{c}:{len(n)}" for c, n in ran.items()), flush=True)
        return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", required=True, choices=["openmpi", "mpich"])
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--ranks", required=True)
    ap.add_argument("--program", required=True, choices=sorted(PROGRAMS))
    ap.add_argument("--collective", action="append", help="only these collectives")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--together", action="store_true",
                    help="force one algorithm of every collective per run (round k: each one's k-th), "
                         "fewer runs for slow programs")
    ap.add_argument("--fail-fast", action="store_true",
                    help="stop at the first failed run (a hang costs the whole --timeout once, not per run)")
    ap.add_argument("--autotune", action="store_true",
                    help="one run per rank count under COLLKIT_AUTOTUNE=1 (no forcing)")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    # Runs happen in a temporary directory: paths given relative to here must not break.
    a.preload = os.path.abspath(a.preload)
    a.cmd = [os.path.abspath(x) if Path(x).exists() else x for x in a.cmd]  # no symlink resolving: venvs
    registry = json.loads(Path(a.registry).read_text())["algorithms"]
    ranks = [int(p) for p in a.ranks.split(",")]
    colls = a.collective or PROGRAMS[a.program]
    failures = runs = 0
    start = time.monotonic()
    by_coll = {c: [x for x in registry if x["collective"] == c] for c in colls}
    labels = {c: next(x["name"] for x in algs if constraint_free(x)) for c, algs in by_coll.items()}
    if a.autotune:
        for p in ranks:
            runs += 1
            failures += 0 if run_autotune(a, colls, labels, p) else 1
        print(f"{a.program}: {runs - failures}/{runs} autotune runs passed in {time.monotonic() - start:.0f} s")
        return 1 if failures else 0
    if a.together:
        rounds = max(len(v) for v in by_coll.values())
        jobs = [[(c, v[k % len(v)]) for c, v in by_coll.items()] for k in range(rounds)]
    else:
        jobs = [[(c, alg)] for c, v in by_coll.items() for alg in v]
    for job in jobs:
        for p in ranks:
            runs += 1
            failures += 0 if run_one(a, job, labels, p) else 1
            if failures and a.fail_fast:
                break
        if failures and a.fail_fast:
            break
    print(f"{a.program}: {runs - failures}/{runs} runs passed in {time.monotonic() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
