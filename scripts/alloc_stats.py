#!/usr/bin/env python3
"""How spread allocations are: groups spanned, the largest group's share, runs
of neighbouring nodes. The numbers behind the defaults of drawn allocations
(collkit.simulation.draw; docs/topologies.md, "Drawn allocations").

    alloc_stats.py real [--map data/leonardo/nodes.txt] FILE.csv ...
        real Slurm allocations (PICO CSV) on a node map: groups = CELL,
        neighbours = consecutive nodes of the map's partition in id order
    alloc_stats.py draw MACHINE [--sizes 4,8,...] [--seeds 20] [--busy B --run R --scatter S]
        drawn allocations on a simulated preset: min / mean / max over seeds 0..N-1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from collkit.simulation import draw  # noqa: E402
from collkit.topology import synthetic  # noqa: E402
from collkit.topology.model import normalise_host  # noqa: E402
from collkit.topology.readers import read_leonardo  # noqa: E402
from collkit.traffic.allocation import read_allocation  # noqa: E402


def real(ns: argparse.Namespace) -> None:
    topo = read_leonardo(ns.map)
    group = {n.name: n.group for n in topo.nodes}
    # the map's partition, per host, for "neighbours in the same partition"
    part = {}
    for line in ns.map.read_text().splitlines():
        t = line.split()
        f = {t[i].upper(): t[i + 1] for i in range(0, len(t) - 1, 2)}
        if "NODE" in f:
            part["lrdn" + f["NODE"]] = f.get("PARTITION", "")
    print("file,nodes,groups,largest_group_share,runs,mean_run")
    for path in ns.files:
        hosts = sorted({normalise_host(h) for h in read_allocation(path).hosts})
        p = part[hosts[0]]
        order = {h: i for i, h in enumerate(sorted(h for h in part if part[h] == p))}
        s = draw.stats(hosts, group.__getitem__, order)
        print(f"{path.name},{s['nodes']},{s['groups']},{s['largest_group_share']:.3f},{s['runs']},"
              f"{s['mean_run']:.2f}")


def drawn(ns: argparse.Namespace) -> None:
    m = synthetic.preset(ns.machine)
    shape = m.shape
    params = {k: getattr(ns, k) for k in draw.PARAMETERS if getattr(ns, k) is not None}
    print(f"# {m.name}: {m.max_nodes} nodes, groups of {shape.group_size}; {draw.defaults(m.name) | params}")
    print("nodes,groups_min,groups_mean,groups_max,largest_share_mean,mean_run_mean")
    for size in (int(x) for x in ns.sizes.split(",")):
        rows = [draw.stats(draw.parse({"draw": "scheduler", "seed": s, **params}, "cli", m.name).nodes(
            m.name, m.max_nodes, size), shape.group_of) for s in range(ns.seeds)]
        g = [r["groups"] for r in rows]
        print(f"{size},{min(g)},{sum(g) / len(g):.1f},{max(g)},"
              f"{sum(r['largest_group_share'] for r in rows) / len(rows):.3f},"
              f"{sum(r['mean_run'] for r in rows) / len(rows):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("real")
    r.add_argument("--map", type=Path, default=REPO / "data" / "leonardo" / "nodes.txt")
    r.add_argument("files", type=Path, nargs="+")
    d = sub.add_parser("draw")
    d.add_argument("machine")
    d.add_argument("--sizes", default="4,8,16,32,64,128,256,512,1024,2048")
    d.add_argument("--seeds", type=int, default=20)
    for k in draw.PARAMETERS:
        d.add_argument(f"--{k}", type=float)
    ns = ap.parse_args()
    (real if ns.what == "real" else drawn)(ns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
