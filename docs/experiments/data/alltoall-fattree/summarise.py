"""Collect the campaigns of docs/experiments/alltoall-fattree.md into one CSV,
with the ideal time and each time's ratio to it.

    python docs/experiments/data/alltoall-fattree/summarise.py DIR... > results.csv

Each DIR is a `collkit run --out DIR` campaign of examples/experiments/
alltoall-fattree-*.toml on one of the alltoall-fattree-platform-*.toml trees
(the tree is read back from the campaign's platform descriptor, resolved.json).

Ideal time: the link-capacity lower bound on the simulated instance (read back
from the campaign's metadata.json), every link of bandwidth b, S bytes per block,
N nodes, a level-l subtree of P_l nodes with U_l links leaving it upwards
(switches' parents times parallel links):
    T_ideal = S/b * max(N - 1, max over l of P_l * (N - P_l) / U_l)
N - 1 blocks leave every node through its one link; P_l * (N - P_l) blocks
leave every level-l subtree through its U_l uplinks. Latency is left out."""

from __future__ import annotations

import csv
import gzip
import json
import lzma
import sys
from pathlib import Path


def open_text(path: Path):
    """PATH, else PATH.xz or PATH.gz: the data directory keeps large or raw files
    compressed (scripts/pack_experiment_data.py)."""
    for p, opener in ((path, open), (path.with_name(path.name + ".xz"), lzma.open),
                      (path.with_name(path.name + ".gz"), gzip.open)):
        if p.exists():
            return opener(p, "rt")
    raise FileNotFoundError(path)


def tree_of(campaign: Path) -> tuple[str, float, dict[int, dict]]:
    """(platform file stem, link bandwidth, instance description per node count)."""
    with open_text(campaign / "metadata.json") as f:
        meta = json.load(f)
    sim = meta["simgrid"]
    machine = sim["settings"]["machine"]
    name = Path(machine["source"]).stem.replace("alltoall-fattree-platform-", "")
    inst = {i["nodes"]: i for i in sim["instances"].values()}
    return name, machine["link_bw_Bps"], inst


def ideal_us(inst: dict, n: int, s: int, bw: float) -> float:
    worst, size, up = n - 1, 1, 1
    down, ups, par = inst["down"], inst["up"], inst["parallel"]
    for level in range(1, len(down)):
        size *= down[level - 1]
        # links leaving a level-l subtree: its level-l switches, each with
        # up[level] parents over parallel[level] links; level-l switches in the
        # subtree = product of up[1..l-1] (XGFT).
        switches = 1
        for k in range(1, level):
            switches *= ups[k]
        up = switches * ups[level] * par[level]
        worst = max(worst, size * (n - size) / up)
    return s / bw * worst * 1e6


def main(dirs: list[str]) -> None:
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["tree", "xgft", "nodes", "bytes", "algorithm", "time_us", "ideal_us", "ratio"])
    rows = []
    for d in dirs:
        name, bw, inst = tree_of(Path(d))
        with open_text(Path(d) / "results.csv") as f:
            for r in csv.DictReader(f):
                if r["status"] != "ok":
                    continue
                n, s = int(r["ranks"]), int(r["bytes"])
                ideal = ideal_us(inst[n], n, s, bw)
                t = float(r["time_median_us"])
                xgft = inst[n]["xgft"] + ";" + ",".join(map(str, inst[n]["parallel"]))
                rows.append([name, xgft, n, s, r["algorithm"], f"{t:.2f}", f"{ideal:.2f}", f"{t / ideal:.3f}"])
    for row in sorted(rows, key=lambda r: (r[0], r[2], r[3], r[4])):
        out.writerow(row)


if __name__ == "__main__":
    main(sys.argv[1:])
