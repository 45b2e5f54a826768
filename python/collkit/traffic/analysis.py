"""From an allocation and a map to per-algorithm traffic."""

from __future__ import annotations

import numpy as np

from collkit.common.errors import UserError
from collkit.topology import Topology, UnknownHost
from collkit.traffic.allocation import Allocation
from collkit.traffic.count import Traffic, count
from collkit.traffic.placement import Placement, place
from collkit.traffic.trace import Trace, TraceFailure, TraceKey, rooted, trace_count
from collkit.traffic.tracer import Tracer


def allocation_nodes(alloc: Allocation, topo: Topology) -> np.ndarray:
    """Node index of every entry; an unknown host is a UserError saying which and where."""
    try:
        return topo.lookup(list(alloc.hosts))
    except UnknownHost as exc:
        raise UserError(f"{alloc.where(exc.position)}: host '{exc.host}' is not in the map "
                        f"{topo.source}") from None


def placement_for(alloc: Allocation, topo: Topology, mode: str | None, ppn: int | None) -> Placement:
    return place(allocation_nodes(alloc, topo), mode, ppn)


def ranks_only(ranks: int, topo: Topology | None, mode: str | None, ppn: int | None) -> tuple[Topology, Placement]:
    """``--ranks P``: ceil(P/ppn) nodes, the first ones of the map in map
    order, or without a map that many nodes in one group."""
    if mode == "explicit":
        raise UserError("--ranks has no allocation to place ranks explicitly; use block or cyclic")
    k = ppn or 1
    nodes = -(-ranks // k)
    if topo is None:
        topo = Topology.single_group(nodes)
    elif nodes > len(topo):
        raise UserError(f"{ranks} ranks at {k} per node need {nodes} nodes; the map {topo.source} "
                        f"has {len(topo)}")
    return topo, place(np.arange(nodes, dtype=np.int32), mode or "block", k, ranks=ranks)


def trace_key(collective: str, algorithm: str, ranks: int, root: int, fmt: str) -> TraceKey:
    return TraceKey(collective, algorithm, ranks, trace_count(collective, ranks, algorithm),
                    root if rooted(collective) else 0, "int8", fmt)


def analyse(tracer: Tracer, collective: str, algorithms: list[str], placement: Placement,
            topo: Topology, root: int = 0, per_step: bool = False) -> list[Traffic]:
    p = placement.ranks
    if rooted(collective) and not 0 <= root < p:
        raise UserError(f"--root {root} is not a rank of {p}")
    fmt = "messages" if per_step else "pairs"
    traces = _traces(tracer, [trace_key(collective, a, p, root, fmt) for a in algorithms])
    return [count(t, placement.rank_node, topo.node_group, per_step) for t in traces]


def message_traces(tracer: Tracer, collective: str, algorithms: list[str], ranks: int, root: int = 0) -> list[Trace]:
    """Each algorithm's trace in messages format (every send with its step)."""
    return _traces(tracer, [trace_key(collective, a, ranks, root, "messages") for a in algorithms])


def _traces(tracer: Tracer, keys: list) -> list[Trace]:
    """The traces of keys, in order; the first that failed is a one-line user error."""
    got = tracer.get_many(keys)
    out = []
    for key in keys:
        res = got[key]
        if isinstance(res, TraceFailure):
            raise UserError(f"no trace of {key.describe()}: {res.reason}")
        assert isinstance(res, Trace)
        out.append(res)
    return out
