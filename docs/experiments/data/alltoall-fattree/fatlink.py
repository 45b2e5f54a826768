"""The all-to-all exchanges on the paper's fat tree of *fat links*, in SimGrid.

    python docs/experiments/data/alltoall-fattree/fatlink.py [--sync] M1 M2 W SIZE... > out.csv

Prisacari et al. (ICS'13) count messages per link of FT(L; M1..ML), a tree in
which a level-l switch has *one* link to its parent: B_min(l) is the load of
that link, whatever the physical cabling. This script draws that tree for two
levels as a SimGrid 3.32 platform with explicit routes (routing="Full"): M2 leaf
switches of M1 nodes, every node on its own link (12.5 GB/s, 100 ns, one link
per direction), every leaf switch on one link per direction to the top switch
of W times that bandwidth (W = M1: full bisection, M1/2: half), own blocks on
a 100 GB/s, 200 ns loopback as collkit's FAT_TREE clusters have. It is an XGFT
whose W uplinks per leaf are perfectly load-balanced: no routing choice, the
link carries whatever leaves the subtree, shared by max-min fairness.

It runs collkit-bench under smpirun (build/simgrid) once per size for xor,
linear_shift and fattree_opt (COLLKIT_FATTREE=M1,M2) with the settings of
collkit's SimGrid launcher, and prints tree,sends,nodes,bytes,algorithm,time_us.
--sync adds smpi/send-is-detached-thresh:0: every send then completes only
when its data has arrived (as SMPI's sends of 64 KiB and more do), so a rank
has at most one message in flight; by default sends below 64 KiB are detached
(eager) and a rank that runs ahead has several.
The platform file and hostfile go to a temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BW = 12.5e9
LAT = 1e-7
LOOP_BW, LOOP_LAT = 1e11, 2e-7
ALGORITHMS = ("xor", "linear_shift", "fattree_opt")
ROOT = Path(__file__).resolve().parents[4]


def platform(m1: int, m2: int, w: int) -> str:
    n = m1 * m2
    out = ["<?xml version='1.0'?>",
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           f"  <!-- FT(2; {m1},{m2}) of fat links: leaf uplinks of {w} x {BW:.0f} B/s -->",
           '  <zone id="machine" routing="Full">']
    for i in range(n):
        out.append(f'    <host id="node{i}" speed="1e10f"/>')
    for i in range(n):
        for d in ("up", "down"):
            out.append(f'    <link id="{d}{i}" bandwidth="{BW!r}Bps" latency="{LAT!r}s"/>')
        out.append(f'    <link id="lo{i}" bandwidth="{LOOP_BW!r}Bps" latency="{LOOP_LAT!r}s"/>')
    for j in range(m2):
        for d in ("up", "down"):
            out.append(f'    <link id="leaf{d}{j}" bandwidth="{w * BW!r}Bps" latency="{LAT!r}s"/>')
    for a in range(n):
        for b in range(n):
            if a == b:
                links = [f"lo{a}"]
            elif a // m1 == b // m1:
                links = [f"up{a}", f"down{b}"]
            else:
                links = [f"up{a}", f"leafup{a // m1}", f"leafdown{b // m1}", f"down{b}"]
            ctn = "".join(f'<link_ctn id="{x}"/>' for x in links)
            out.append(f'    <route src="node{a}" dst="node{b}" symmetrical="NO">{ctn}</route>')
    out += ["  </zone>", "</platform>", ""]
    return "\n".join(out)


def run(xml: Path, hostfile: Path, tmp: Path, n: int, tree: str, alg: str, size: int, sync: bool) -> float:
    points = tmp / "p.points"
    out = tmp / "out.jsonl"
    out.unlink(missing_ok=True)  # collkit-bench appends
    points.write_text(f"id=x collective=alltoall backend=collkit algorithm={alg} count={size} dtype=int8 op=sum "
                      "root=0 in_place=0 warmup=0 min_iters=1 max_iters=1 budget_s=0 sync=dissemination "
                      "validate=none readback=\n")
    argv = ["smpirun", "-platform", str(xml), "-hostfile", str(hostfile), "-np", str(n),
            "--cfg=smpi/simulate-computation:no", "--cfg=smpi/wtime:0", "--cfg=network/model:CM02",
            "--cfg=network/crosstraffic:0", "--cfg=smpi/auto-shared-malloc-thresh:65536",
            *(["--cfg=smpi/send-is-detached-thresh:0"] if sync else []), f"--cfg=smpi/tmpdir:{tmp}", "--log=xbt_cfg.thresh:warning", "--log=smpi_config.thresh:warning",
            str(ROOT / "build" / "simgrid" / "bench" / "collkit-bench"), "--points", str(points), "--out", str(out)]
    env = dict(os.environ, TMPDIR=str(tmp), COLLKIT_FATTREE=tree)
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"smpirun failed for {alg} {size} B: {done.stderr.strip().splitlines()[-1:]}")
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "point":
            return float(rec["times_us"][0])
    sys.exit(f"no point in {out}")


def main(args: list[str]) -> None:
    sync = bool(args) and args[0] == "--sync"
    args = args[1:] if sync else args
    if len(args) < 4 or not all(a.isdigit() for a in args):
        sys.exit("usage: fatlink.py [--sync] M1 M2 W SIZE... (integers; W uplinks' worth per leaf, SIZE bytes per block)")
    m1, m2, w, sizes = int(args[0]), int(args[1]), int(args[2]), [int(a) for a in args[3:]]
    n = m1 * m2
    print("tree,sends,nodes,bytes,algorithm,time_us")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        xml, hostfile = tmp / "platform.xml", tmp / "hosts.txt"
        xml.write_text(platform(m1, m2, w))
        hostfile.write_text("".join(f"node{i}\n" for i in range(n)))
        for size in sizes:
            for alg in ALGORITHMS:
                t = run(xml, hostfile, tmp, n, f"{m1},{m2}", alg, size, sync)
                sends = "sync" if sync else "eager"
                print(f"fatlink-{m1}x{m2}-w{w},{sends},{n},{size},{alg},{t:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
