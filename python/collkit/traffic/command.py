"""``collkit traffic``: the command line of the traffic analysis."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from collkit.common.argtypes import int_at_least
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.topology import Topology, read_map
from collkit.topology import fattree as ft
from collkit.topology.synthetic import SIM_PREFIX, Machine, preset
from collkit.traffic import output
from collkit.traffic.allocation import from_hostlist, read_allocation
from collkit.simulation.settings import NODE_ENV_VAR
from collkit.traffic.analysis import analyse, message_traces, placement_for, ranks_only
from collkit.traffic.jobs import run_jobs
from collkit.traffic import linkloads, nics as nicload
from collkit.traffic.placement import PLACEMENTS
from collkit.traffic.trace import blocked, rooted, trace_count
from collkit.traffic.tracer import Tracer, find_binary

DESCRIPTION = """\
Count the bytes that libcollkit's algorithms send inside a node, inside a group
(a dragonfly group or fat-tree pod) and across groups, for a job allocation on a
machine map. Messages come from the algorithms' own C code (ck_trace), never
from a model of them; traces are cached in the build cache's trace-cache/ (collkit mpis shows where)."""

EPILOG = """\
allocations (--alloc FILE, or every file of --jobs DIR):
  PICO CSV     header 'MPI_Rank,allocation', then 'rank,host' per rank:
                 MPI_Rank,allocation
                 0,lrdn0063.leonardo.local
                 1,lrdn0110.leonardo.local
  hostfile     one host per line, rank i = line i; a line may be a hostlist
               ('lrdn[0063-0065]' stands for three lines); '#' starts a comment
  --nodelist   a Slurm hostlist: 'lrdn[0063,0110-0112],lrdn0200'; numbers keep
               the width of their lower bound ([0063-0065]); several bracket
               groups expand as a product (r[1-2]n[1-4])
  Host names are matched without their domain, in any case.

maps (--map FILE):
  Leonardo     'NODE 0063 RACK 3 CELL 1 ROW 1 PARTITION 1 SWITCH 10300' per node;
               CELL is the group; node NODE NNNN is host lrdnNNNN
  CSV          'host,group[,switch]' per line; a first line 'host,...' is a header
  sim:NAME     a simulated machine (lumi-like, leonardo-like, marenostrum5-like,
               fugaku-like, ...; docs/topologies.md): with --ranks, the smallest
               instance of its shape holding the nodes (ranks in block order over
               node0, node1, ...; --ppn defaults to the machine's); with an
               allocation, the whole machine, hosts node0 .. nodeN-1

placement (which node each rank runs on):
  block        (default) --ppn K consecutive ranks per node, nodes in allocation order
  cyclic       rank r on node r mod N
  explicit     rank i on the allocation's i-th entry; the default when the
               allocation lists a host more than once and --ppn is not given
  --ranks P    no allocation: ceil(P/K) nodes, the map's first ones in map order,
               or without --map that many nodes in one group (all traffic is then
               intra-node or intra-group)

multi-NIC nodes (--nics K, or --map sim:NAME of a machine with nics, e.g. rails4-like):
  with --ranks and block placement: local rank l of a node on NIC l mod K; a
  message inside a node takes the intra-node link, any other leaves by the
  sender's NIC and enters by the receiver's. Adds bytes out/in per NIC index
  (summed over the nodes), the busiest NIC, balance (busiest / mean; 1.00 =
  even) and the most off-node sends of one rank (a ring's inter-node steps);
  --per-step adds bytes out per NIC and step. --format csv then writes the
  per-NIC rows; json an object {"traffic": [...], "nics": [...]}.

node-aware algorithms (parallel_rings, bine_hierarchical, ...) are traced with
  COLLKIT_RANKS_PER_NODE = --ppn under block placement, so they see the nodes
  the counts use.

fat trees (--link-loads, alltoall only):
  --fattree M1,...,ML   FT(L; M1..ML): level-l switches have M_l children, rank i on
                        leaf i; --map sim:NAME of a fat-tree preset gives its children
                        per switch instead. --ranks k*M1*...*ML adds k ranks per node
                        as a leaf level. Per algorithm, level l and step: the most
                        messages leaving (max_up) / entering (max_down) one level-l
                        subtree, and the paper's bound B_min(l); a row step=max per
                        level. fattree_opt gets the tree through COLLKIT_FATTREE.
  --routing dmodk       per physical link instead of per subtree, routed as SimGrid
                        3.32's FAT_TREE does (up: parent port chosen by the
                        destination's position, D-mod-k; down over parallel links by
                        the source's): per level and step the busiest uplink and
                        downlink (max_up, max_down) and `spread`, the busiest link had
                        each subtree's messages been spread evenly over its `links`
                        uplinks. Needs the cabling: --xgft 'L;M1,..;W1,..;P1,..'
                        (SimGrid's topo_parameters) or --map sim:NAME; one rank per host.

results are in multiples of n, the vector size in bytes (for gather, scatter,
allgather, reduce_scatter and alltoall the p blocks together). Traces use int8
elements and a count that splits n exactly: lcm(p, 2^floor(log2 p)) elements for
bcast, reduce and allreduce (p for those that only send whole vectors), one
element per block for the others. A step is the index of a send among its
rank's sends (--per-step): the round for butterflies and rings, not for trees.

examples:
  collkit traffic --collective bcast --algorithm binomial_doubling --algorithm binomial_halving \\
      --alloc alloc_128.csv --map nodes.txt
  collkit traffic --collective allreduce --algorithm recursive_doubling --algorithm bine_latency \\
      --nodelist 'lrdn[0001-0064]' --map nodes.txt --ppn 4 --format csv
  collkit traffic --collective allgather --algorithm ring --algorithm parallel_rings \\
      --map sim:rails4-like --ranks 64 --per-step
  collkit traffic --collective alltoall --algorithm fattree_opt --algorithm xor \\
      --algorithm linear_shift --fattree 8,4,2 --link-loads --format csv
  collkit traffic --collective alltoall --algorithm fattree_opt --algorithm xor \\
      --xgft '2;16,8;1,8;1,1' --link-loads --routing dmodk
  collkit traffic --jobs allocations/ --map nodes.txt --collective allreduce \\
      --algorithm recursive_doubling --algorithm bine_latency --out jobs.csv
"""


_root = int_at_least("root", 0)


def _collective_help() -> str:
    try:
        return f"the collective: {', '.join(registry.collective_names())}"
    except UserError:
        return "the collective (`collkit algorithms` lists them once built)"


def add_parser(sub) -> None:
    t = sub.add_parser("traffic", help="bytes inside nodes, inside groups and across groups, per algorithm",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--collective", required=True, metavar="C", help=_collective_help())
    t.add_argument("--algorithm", action="append", required=True, metavar="A",
                   help="a libcollkit algorithm; repeat to compare (the first is the baseline)")
    # Not required by argparse: --link-loads needs only the tree (checked in run).
    src = t.add_mutually_exclusive_group()
    src.add_argument("--alloc", type=Path, metavar="FILE", help="allocation file: PICO CSV or hostfile")
    src.add_argument("--nodelist", metavar="EXPR", help="Slurm hostlist, e.g. 'lrdn[0063,0110-0112]'")
    src.add_argument("--ranks", type=int_at_least("rank count", 1), metavar="P", help="P ranks, no allocation")
    src.add_argument("--jobs", type=Path, metavar="DIR",
                     help="every allocation file in DIR, one job each; one CSV row per job")
    t.add_argument("--map", type=Path, metavar="FILE",
                   help="node map: Leonardo format or host,group[,switch] CSV; or sim:NAME, a simulated machine")
    t.add_argument("--ppn", type=int_at_least("--ppn", 1), metavar="K", help="ranks per node (default 1)")
    t.add_argument("--placement", choices=PLACEMENTS, help="block (default), cyclic or explicit")
    t.add_argument("--nics", type=int_at_least("--nics", 1), metavar="K",
                   help="NICs per node: bytes per NIC (with --ranks; default: the sim: machine's)")
    t.add_argument("--root", type=_root, default=0, metavar="R", help="root rank of bcast, reduce, gather, scatter (default 0)")
    t.add_argument("--per-step", action="store_true", help="also count each step")
    t.add_argument("--fattree", metavar="M1,M2,...",
                   help="the fat tree FT(L; M1..ML), rank i on leaf i (sets COLLKIT_FATTREE for fattree_opt)")
    t.add_argument("--xgft", metavar="'L;M..;W..;P..'",
                   help="with --link-loads: the fat tree as SimGrid's XGFT topo_parameters (children, parents "
                        "and parallel links per level); its children per switch are the tree's radices")
    t.add_argument("--routing", choices=("subtree", "dmodk"),
                   help="with --link-loads: count per subtree (default, routing-free) or per physical link "
                        "under SimGrid's D-mod-k routing (needs --xgft or --map sim:NAME)")
    t.add_argument("--link-loads", action="store_true",
                   help="alltoall on a fat tree (--fattree or --map sim:NAME of a fat tree): per level and "
                        "step, the most messages leaving/entering a subtree, and the bound B_min")
    t.add_argument("--format", choices=("table", "csv", "json"), help="output format (default table)")
    t.add_argument("--out", type=Path, metavar="CSV", help="with --jobs: write the CSV here instead of stdout")
    t.set_defaults(func=run)


def _check_names(collective: str, names: list[str]) -> list[str]:
    coll = registry.check_collective(collective)
    chosen = registry.resolve(registry.load(), names, coll)
    out = [a.name for a in chosen]
    if len(set(out)) != len(out) or len(out) != len(names):
        raise UserError("an algorithm is named twice")
    return out


def _sim_machine(path: Path | None) -> Machine | None:
    """The simulated machine that ``--map sim:NAME`` names, else None."""
    if path is None or not str(path).startswith(SIM_PREFIX):
        return None
    return preset(str(path)[len(SIM_PREFIX):])


MAX_TRACE_RANKS = 1 << 20   # CK_TRACE_MAX_RANKS in tools/trace/trace.h


def run(ns: argparse.Namespace) -> int:
    coll = registry.check_collective(ns.collective)
    algorithms = _check_names(coll, ns.algorithm)
    if ns.root and not rooted(coll):
        raise UserError(f"--root does not apply to {coll}")
    if ns.out is not None and ns.jobs is None:
        raise UserError("--out goes with --jobs")
    alloc = None
    if ns.alloc is not None:
        alloc = read_allocation(ns.alloc)
    elif ns.nodelist is not None:
        alloc = from_hostlist(ns.nodelist)
    machine = _sim_machine(ns.map)
    if ns.link_loads or ns.fattree or ns.xgft or ns.routing:
        return _fat_tree(ns, coll, algorithms, machine)
    if ns.alloc is None and ns.nodelist is None and ns.ranks is None and ns.jobs is None:
        raise UserError("one of the arguments --alloc --nodelist --ranks --jobs is required "
                        "(see `collkit traffic --help`)")
    nics = ns.nics or (machine.nics if machine is not None else 0)
    if nics:
        if ns.ranks is None:
            raise UserError("NIC loads (--nics, or a sim: machine with nics) need --ranks P "
                            "(block placement on the simulated machine)")
        if ns.placement not in (None, "block"):
            raise UserError(f"NIC loads need block placement (ranks of a node consecutive), not {ns.placement}")
        ppn = ns.ppn or (machine.ppn if machine is not None else 1)
        if ppn < nics:
            raise UserError(f"--nics {nics} needs at least {nics} ranks per node (--ppn), not {ppn}")
    topo: Topology | None = None
    if machine is not None:
        if ns.ranks is None:
            topo = machine.instance(machine.max_nodes).topology()
    elif ns.map:
        topo = read_map(ns.map)
    tracer = Tracer()

    if ns.jobs is not None:
        if topo is None:
            raise UserError("--jobs needs --map FILE (which group each node is in)")
        if len(algorithms) != 2:
            raise UserError("--jobs compares exactly two algorithms: give --algorithm twice")
        if ns.per_step or ns.format not in (None, "csv"):
            raise UserError("--jobs writes CSV only (no --per-step, no --format table/json)")
        rows = run_jobs(ns.jobs, topo, coll, algorithms, tracer, ns.placement, ns.ppn, ns.root)
        text = output.write_jobs(rows, algorithms, ns.out)
        if text is not None:
            _emit(text)
        return 0

    if ns.ranks is not None:
        if ns.ranks > MAX_TRACE_RANKS:
            raise UserError(f"--ranks {ns.ranks} is above the {MAX_TRACE_RANKS} ranks ck_trace simulates")
        for alg in algorithms:
            why = tracer.size_refusal(coll, alg, ns.ranks, lambda p, a=alg: trace_count(coll, p, a))
            if why:
                raise UserError(f"--ranks {ns.ranks}: {why}")
        ppn = ns.ppn
        if machine is not None:
            ppn = ppn or machine.ppn
            topo = machine.instance(-(-ns.ranks // ppn)).topology()
        topo, placement = ranks_only(ns.ranks, topo, ns.placement, ppn)
    else:
        if topo is None:
            raise UserError("an allocation needs --map FILE (which group each node is in)")
        assert alloc is not None
        placement = placement_for(alloc, topo, ns.placement, ns.ppn)
    with _node_env(placement.ppn if placement.mode == "block" else None):
        results = analyse(tracer, coll, algorithms, placement, topo, ns.root, ns.per_step)
        loads = [nicload.nic_load(t, placement.ppn, nics)
                 for t in message_traces(tracer, coll, algorithms, placement.ranks, ns.root)] if nics else []
    fmt = ns.format or "table"
    if fmt == "csv":
        _emit(nicload.csv_text(loads, ns.per_step) if loads else output.csv_text(results, ns.per_step))
    elif fmt == "json":
        if loads:
            _emit(json.dumps({"traffic": json.loads(output.json_text(results, ns.per_step)),
                              "nics": nicload.json_obj(loads, ns.per_step)}, indent=2))
        else:
            _emit(output.json_text(results, ns.per_step))
    else:
        r = results[0]
        counts = sorted({trace_count(coll, r.ranks, x.algorithm) for x in results})
        block = " per block" if blocked(coll) else ""
        if len(counts) == 1:
            n = f"n = {r.n} B (int8, count {counts[0]}{block})"
        else:
            n = f"n = the vector's bytes (int8, counts {' / '.join(map(str, counts))}{block})"
        context = (f"{r.ranks} ranks on {r.nodes} nodes in {r.groups} group{'s' if r.groups != 1 else ''} "
                   f"({placement.mode}, "
                   f"{placement.ppn} per node); {n}")
        _emit(output.table(results, ns.per_step, context))
        if loads:
            _emit(nicload.table(loads, ns.per_step))
    return 0


def _fat_tree(ns: argparse.Namespace, coll: str, algorithms: list[str], machine: Machine | None) -> int:
    """--fattree / --link-loads: per-phase link loads of alltoall on FT(L; M1..ML)."""
    if not ns.link_loads:
        raise UserError("--fattree, --xgft and --routing go with --link-loads (the tree's link loads per step)")
    if coll != "alltoall":
        raise UserError(f"--link-loads counts alltoall exchanges, not {coll}: use --collective alltoall")
    if ns.alloc or ns.nodelist or ns.jobs or ns.per_step or ns.placement or ns.ppn:
        raise UserError("--link-loads takes the tree and optionally --ranks: no allocation, --jobs, "
                        "--per-step (its CSV has every step), --placement or --ppn")
    xgft = None
    if sum(1 for x in (ns.fattree, ns.xgft, ns.map) if x) > 1:
        raise UserError("give the tree once: --fattree M1,M2,..., --xgft 'L;M..;W..;P..' or --map sim:NAME")
    if ns.fattree:
        try:
            tree = ft.parse(ns.fattree)
        except ValueError as exc:
            raise UserError(f"--fattree: {exc}") from None
    elif ns.xgft:
        xgft = linkloads.parse_xgft(ns.xgft)
        tree = ft.FatTree(tuple(xgft.down))
    elif machine is not None and machine.shape.kind == "fattree":
        xgft = machine.shape
        tree = ft.FatTree(tuple(machine.shape.down))
    else:
        raise UserError("--link-loads needs the tree: --fattree M1,M2,..., --xgft 'L;M..;W..;P..' "
                        "or --map sim:NAME of a fat tree")
    if ns.routing == "dmodk":
        return _dmodk(ns, algorithms, tree, xgft)
    try:
        tree = ft.fit(ns.ranks or tree.leaves, tree)
    except ValueError as exc:
        raise UserError(f"--ranks: {exc}") from None
    if tree.leaves > MAX_TRACE_RANKS:
        raise UserError(f"the tree has {tree.leaves} leaves, above the {MAX_TRACE_RANKS} ranks ck_trace simulates")
    binary = find_binary()
    rows = []
    for alg in algorithms:
        rows += linkloads.loads(linkloads.trace_messages(binary, alg, tree), tree)
    fmt = ns.format or "table"
    if fmt == "csv":
        _emit(linkloads.csv_text(rows))
    elif fmt == "json":
        _emit(json.dumps({"tree": list(tree.radices), "rows": linkloads.json_rows(rows)}, indent=1))
    else:
        _emit(linkloads.table_text(rows, tree))
    return 0


def _dmodk(ns: argparse.Namespace, algorithms: list[str], tree: ft.FatTree, xgft: linkloads.Xgft | None) -> int:
    """--routing dmodk: messages per physical link of the XGFT under SimGrid's routing."""
    if xgft is None:
        raise UserError("--routing dmodk needs the cabling: --xgft 'L;M1,..;W1,..;P1,..' (SimGrid's "
                        "topo_parameters) or --map sim:NAME of a fat tree, not --fattree")
    if ns.ranks and ns.ranks != tree.leaves:
        raise UserError(f"--routing dmodk counts one rank per host: --ranks must be {tree.leaves} or left out")
    if tree.leaves > MAX_TRACE_RANKS:
        raise UserError(f"the tree has {tree.leaves} leaves, above the {MAX_TRACE_RANKS} ranks ck_trace simulates")
    binary = find_binary()
    rows = []
    for alg in algorithms:
        rows += linkloads.link_loads(linkloads.trace_messages(binary, alg, tree), xgft)
    fmt = ns.format or "table"
    if fmt == "csv":
        _emit(linkloads.physical_csv_text(rows))
    elif fmt == "json":
        _emit(json.dumps({"xgft": xgft.topo_parameters(), "routing": "dmodk",
                          "rows": linkloads.physical_json_rows(rows)}, indent=1))
    else:
        _emit(linkloads.physical_table_text(rows, xgft))
    return 0


@contextmanager
def _node_env(ppn: int | None):
    """COLLKIT_RANKS_PER_NODE = ppn while tracing (block placement): node-aware
    algorithms learn the nodes from it (lib/core/nodes.c) and the tracer's cache
    keys on it. Restored afterwards, so nothing launched later inherits it."""
    old = os.environ.get(NODE_ENV_VAR)
    if ppn is not None:
        os.environ[NODE_ENV_VAR] = str(ppn)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(NODE_ENV_VAR, None)
        else:
            os.environ[NODE_ENV_VAR] = old


def _emit(text: str) -> None:
    """Print; a reader that stops early (`| head`) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
