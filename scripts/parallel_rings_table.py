#!/usr/bin/env python3
"""The tables of docs/experiments/parallel-rings.md from its campaigns.

Reads every DIR/<campaign>-nics<K>/results.csv under the data directory (default
docs/experiments/data/parallel-rings) and prints, per collective, rank count and
vector size n, one Markdown row per algorithm: the simulated time with 1, 2 and 4
NICs per node, and the flat ring's time over it (speed-up; > 1 is faster than the
ring). Allgather sizes in the campaigns are one rank's block: n = block x p.

    .venv/bin/python scripts/parallel_rings_table.py [DATA_DIR]"""

from __future__ import annotations

import csv
import re
import sys
from collections import defaultdict
from pathlib import Path

BLOCKED = {"allgather"}        # campaign size = one rank's block
NICS = (1, 2, 4)


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def load(root: Path) -> dict:
    """(collective, ranks, n) -> algorithm -> nics -> median us."""
    table: dict = defaultdict(lambda: defaultdict(dict))
    for f in sorted(root.glob("*-nics*/results.csv")):
        m = re.search(r"-nics(\d+)$", f.parent.name)
        if not m:
            continue
        nics = int(m.group(1))
        with f.open() as fh:
            for r in csv.DictReader(fh):
                if r["status"] != "ok":
                    continue
                p, b = int(r["ranks"]), int(r["bytes"])
                n = b * p if r["collective"] in BLOCKED else b
                name = r["algorithm"] if r["backend"] == "collkit" else f"SMPI {r['algorithm']}"
                table[(r["collective"], p, n)][name][nics] = float(r["time_median_us"])
    return table


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / \
        "docs" / "experiments" / "data" / "parallel-rings"
    table = load(root)
    if not table:
        print(f"no results under {root}", file=sys.stderr)
        return 2
    for (coll, p, n), algs in sorted(table.items()):
        print(f"\n**{coll}, {p // 4} nodes x 4 ranks, n = {size_text(n)}** (us; speed-up over the flat ring)\n")
        print("| algorithm | " + " | ".join(f"{k} NIC{'s' if k > 1 else ''}" for k in NICS) + " |")
        print("| --- |" + " ---: |" * len(NICS))
        ring = algs.get("ring", {})
        for name, times in sorted(algs.items(), key=lambda kv: min(kv[1].values())):
            cells = []
            for k in NICS:
                if k not in times:
                    cells.append("not run")
                    continue
                cell = f"{times[k]:,.1f}"
                if name != "ring" and k in ring:
                    cell += f" ({ring[k] / times[k]:.2f}x)"
                cells.append(cell)
            print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
