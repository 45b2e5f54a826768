#!/usr/bin/env python3
"""What a libcollkit call costs outside its messages, per algorithm, in instructions.

    .venv/bin/python scripts/bench_call_cost.py BUILD [--mpirun CMD] [--ranks 2] [--count 2]
        [--calls 2000] [--algorithm C/NAME ...] [--out FILE.json] [--markdown FILE.md]

Runs BUILD/bench/collkit-call-cost (one algorithm called back to back, bench/call_cost.c)
under `valgrind --tool=callgrind --toggle-collect=ck_algorithm_call` and sorts rank 0's
instructions per call into:

* libcollkit: the algorithm and lib/core (checks, block math, folding);
* queries: MPI calls that only answer a question (datatype extent, size and
  envelope, communicator size, rank and kind, op commutativity, datatype
  construction);
* allocation: malloc and free;
* copies: memcpy and memmove (the local copies, whoever makes them);
* environment: getenv and the libc string functions it and number parsing use
  (a getenv per call was a fifth of alltoall linear_shift's instructions);
* messages: everything else, MPI's transport and progress. Not repeatable: a rank
  waiting for its peer runs MPI's progress loop for as long as it waits.

The first five are the call's fixed cost, and they are exact: the same binary and
inputs give the same counts whatever else the machine does, so a before/after on a
shared 2-core machine needs no statistics. Default: every registry algorithm at
count 2 (8 B of int32), 2 ranks, Open MPI's mpirun (--mpirun "mpirun.openmpi
--oversubscribe"). Needs valgrind. Exit status 2 with one line for a bad argument."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

QUERIES = re.compile(r"^P?MPI_(Type_get_extent|Type_get_true_extent|Type_size|Type_get_envelope|Comm_size|"
                     r"Comm_rank|Comm_test_inter|Op_commutative|Type_commit|Type_free|Type_create_\w+|"
                     r"Get_address|Aint_diff)(_c)?$|^ompi_datatype_get_args$")
ALLOCATION = re.compile(r"^(_int_)?(malloc|free|calloc|realloc)$|^(tcache|arena)_\w+|^malloc_\w+")
COPIES = re.compile(r"^__(memcpy|memmove)\w*")
ENVIRONMENT = re.compile(r"^(secure_)?getenv$|^__(strncmp|strcmp|strlen)\w*$|^_*strto\w+$")
CLASSES = ("libcollkit", "queries", "allocation", "copies", "environment", "messages")
FIXED = CLASSES[:5]
LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S+?):(\S+)(?:\s+\[(.*)\])?\s*$")


def classify(path: str, function: str, obj: str, lib_dir: str) -> str:
    if path.startswith(lib_dir) or "/lib/core/" in path or function.startswith("ck_"):
        return "libcollkit"
    if QUERIES.match(function):
        return "queries"
    if ALLOCATION.match(function) and "libc" in obj:
        return "allocation"
    if COPIES.match(function):
        return "copies"
    if ENVIRONMENT.match(function) and "libc" in obj:
        return "environment"
    return "messages"


def per_call(annotate: str, calls: int, lib_dir: str) -> dict[str, float]:
    """Instructions per call of each class from `callgrind_annotate --inclusive=no` output."""
    out = {c: 0.0 for c in CLASSES}
    for line in annotate.splitlines():
        m = LINE.match(line)
        if not m or m.group(2) == "PROGRAM" or "TOTALS" in line:
            continue
        n = int(m.group(1).replace(",", ""))
        out[classify(m.group(2), m.group(3), m.group(4) or "", lib_dir)] += n / calls
    return out


def registry_algorithms(build: Path) -> list[str]:
    reg = json.loads((build / "registry.json").read_text())
    return [f"{a['collective']}/{a['name']}" for a in reg["algorithms"]]


def measure(build: Path, mpirun: list[str], ranks: int, alg: str, count: int, calls: int,
            lib_dir: str) -> dict[str, float] | str:
    coll, name = alg.split("/", 1)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*mpirun, "-n", str(ranks), "valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.%p",
               "--toggle-collect=ck_algorithm_call", str(build / "bench" / "collkit-call-cost"), coll, name,
               "--count", str(count), "--calls", str(calls)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if run.returncode != 0:
            return (run.stderr.strip().splitlines() or ["failed"])[-1][:200]
        pid = re.search(r"^rank 0 pid (\d+)$", run.stdout, re.M)
        first = Path(tmp) / f"cg.{pid.group(1)}" if pid else None
        if first is None or not first.is_file():
            return "no callgrind file of rank 0"
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(first)],
                             capture_output=True, text=True).stdout
    return per_call(ann, calls, lib_dir)


def markdown(rows: list[dict], ranks: int, count: int) -> str:
    out = [f"Instructions per call outside the messages, rank 0 of {ranks}, count {count} (int32):", "",
           "| algorithm | libcollkit | queries | allocation | copies | environment | fixed cost | messages (not repeatable) |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['algorithm']} | {r['error']} | | | | | | |")
            continue
        c = r["per_call"]
        fixed = sum(c.get(k, 0.0) for k in FIXED)
        out.append(f"| {r['algorithm']} | {c['libcollkit']:.0f} | {c['queries']:.0f} | {c['allocation']:.0f} | "
                   f"{c['copies']:.0f} | {c.get('environment', 0.0):.0f} | {fixed:.0f} | {c['messages']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=Path, help="a build tree with bench/collkit-call-cost and registry.json")
    ap.add_argument("--mpirun", default="mpirun.openmpi --oversubscribe")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--algorithm", action="append", help="COLLECTIVE/NAME (repeatable; default every one)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv[1:])
    prog = a.build / "bench" / "collkit-call-cost"
    if not prog.is_file():
        print(f"bench_call_cost: {prog} not found: build the tree first (cmake --build BUILD)", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("bench_call_cost: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    if not (1 <= a.ranks <= 64 and 0 <= a.count <= 1 << 20 and 1 <= a.calls <= 10 ** 6):
        print("bench_call_cost: --ranks 1..64, --count 0..2^20, --calls 1..10^6", file=sys.stderr)
        return 2
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    lib_dir = str(Path(__file__).resolve().parents[1] / "lib")
    algs = a.algorithm or registry_algorithms(a.build)
    rows = []
    for alg in algs:
        got = measure(a.build, shlex.split(a.mpirun), a.ranks, alg, a.count, a.calls, lib_dir)
        row = {"algorithm": alg, **({"error": got} if isinstance(got, str) else {"per_call": got})}
        rows.append(row)
        fixed = "" if isinstance(got, str) else f"fixed {sum(got[k] for k in FIXED):.0f}"
        print(f"{alg}: {got if isinstance(got, str) else fixed}", file=sys.stderr, flush=True)
    if a.out:
        a.out.write_text(json.dumps({"ranks": a.ranks, "count": a.count, "calls": a.calls, "mpirun": a.mpirun,
                                     "rows": rows}, indent=1) + "\n")
    text = markdown(rows, a.ranks, a.count)
    if a.markdown:
        a.markdown.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
