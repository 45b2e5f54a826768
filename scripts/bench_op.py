#!/usr/bin/env python3
"""libcollkit's local reduction against the library's MPI_Reduce_local: the table of
docs/benchmarks.md from collkit-op-bench (bench/op_bench.c).

    .venv/bin/python scripts/bench_op.py BUILD/bench/collkit-op-bench [--bytes 4096,262144,16777216]
        [--rounds 8] [--min-ms 20] [--launcher "mpirun -n 1"] [--markdown FILE]

Per datatype, op and size: the median time per call of each side over the rounds,
the reduction rate in GB/s (operand bytes per second: n bytes reduced into n bytes;
it reads 2n and writes n), memcpy's rate on the same n bytes (reads n, writes n), the
median ratio libcollkit / library of the rounds, and the exact signed-rank p-value of
the per-round log ratios. A case fails issue #33's bound when libcollkit is slower by
more than 5 % (median ratio > 1.05) with p < 0.05. Timings, not a test."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from collkit.analysis.stats import signed_rank_p  # noqa: E402
from collkit.campaign.sizes import format_size  # noqa: E402

ALPHA = 0.05
BOUND = 1.05


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", type=Path)
    ap.add_argument("--bytes", default="4096,262144,16777216")
    ap.add_argument("--rounds", default="8")
    ap.add_argument("--min-ms", default="20")
    ap.add_argument("--launcher", default="", help="command before the program, e.g. 'mpirun -n 1' (split like a shell)")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--raw", type=Path, default=None, help="also keep the program's JSON lines here")
    a = ap.parse_args(argv)
    if not a.program.is_file():
        print(f"bench_op: {a.program} is not a file (build collkit-op-bench first)", file=sys.stderr)
        return 2
    cmd = [*shlex.split(a.launcher), str(a.program), "--bytes", a.bytes, "--rounds", a.rounds, "--min-ms", a.min_ms]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print(f"bench_op: {' '.join(cmd)} exited with {proc.returncode}", file=sys.stderr)
        return 2 if proc.returncode == 2 else 1
    if a.raw:
        a.raw.write_text(proc.stdout)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    out = ["| datatype | op | size | libcollkit ns | library ns | libcollkit GB/s | library GB/s | memcpy GB/s "
           "| ratio | p | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    failing = 0
    ratios = []
    for r in rows:
        ck, lib, mem = (statistics.median(r[k]) for k in ("collkit_ns", "library_ns", "memcpy_ns"))
        q = [c / b for c, b in zip(r["collkit_ns"], r["library_ns"]) if c > 0 and b > 0]
        ratio = statistics.median(q)
        ratios.append(ratio)
        p = signed_rank_p([math.log(x) for x in q])
        verdict = "tie" if p >= ALPHA else ("library faster" if ratio > 1 else "libcollkit faster")
        if p < ALPHA and ratio > BOUND:
            verdict += " (> 5 %)"
            failing += 1
        n = r["bytes"]
        out.append(f"| {r['dtype']} | {r['op']} | {format_size(n)} | {ck:.0f} | {lib:.0f} | {n / ck:.2f} | "
                   f"{n / lib:.2f} | {n / mem:.2f} | {ratio:.3f} | {p:.3f} | {verdict} |")
    text = (f"{len(rows)} cases, {a.rounds} rounds; median ratio {statistics.median(ratios):.3f}; "
            f"cases where libcollkit is significantly more than 5 % slower: {failing}\n\n" + "\n".join(out) + "\n")
    print(text)
    if a.markdown:
        a.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
