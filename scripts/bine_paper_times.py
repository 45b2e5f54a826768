#!/usr/bin/env python3
"""Every simulated time of one scripts/bine_paper_run.sh output directory in one small
file (issue #53; docs/experiments/data/bine-paper/): the campaigns themselves are too
large to keep (docs/benchmarks.md, "Data policy"), their times are what the tables come
from, and the runs are deterministic (the same command gives the same times).

    .venv/bin/python scripts/bine_paper_times.py OUT DEST.csv.xz

DEST: xz-compressed CSV, variant,spec,collective,algorithm,ranks,bytes,time_us (ok points;
time_us to 6 significant digits). Bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import csv
import lzma
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: bine_paper_times.py OUT DEST.csv.xz (OUT: a bine_paper_run.sh directory)", file=sys.stderr)
        return 2
    out, dest = Path(argv[0]), Path(argv[1])
    found = sorted(out.glob("*/*/results.csv"))
    if not found:
        print(f"bine_paper_times: {out} holds no VARIANT/SPEC/results.csv; give a bine_paper_run.sh directory",
              file=sys.stderr)
        return 2
    lines = ["variant,spec,collective,algorithm,ranks,bytes,time_us"]
    for res in found:
        variant, spec = res.parent.parent.name, res.parent.name
        with open(res, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] == "ok":
                    lines.append(",".join([variant, spec, r["collective"], r["algorithm"], r["ranks"], r["bytes"],
                                           f"{float(r['time_median_us']):.6g}"]))
    try:
        dest.write_bytes(lzma.compress(("\n".join(lines) + "\n").encode(), preset=9))
    except OSError as exc:
        print(f"bine_paper_times: cannot write {dest}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"{len(lines) - 1} times -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
