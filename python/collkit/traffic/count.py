"""Counting a trace's bytes by where they travel, vectorised.

Every message is classed by its two ranks' nodes: the same node
(intra-node), different nodes of one group (intra-group), or different groups
(inter-group). Steps are ck_trace's: the index of a send among its rank's
sends, so "step k" gathers every rank's k-th send."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collkit.traffic.trace import Trace

INTRA_NODE, INTRA_GROUP, INTER_GROUP = 0, 1, 2


@dataclass(frozen=True)
class Volume:
    """Bytes by class."""

    intra_node: int
    intra_group: int
    inter_group: int

    @property
    def total(self) -> int:
        return self.intra_node + self.intra_group + self.inter_group

    @classmethod
    def of(cls, triple) -> "Volume":
        a, b, c = (int(round(float(x))) for x in triple)
        return cls(a, b, c)


@dataclass(frozen=True)
class Traffic:
    """One algorithm's traffic on one placement."""

    collective: str
    algorithm: str
    ranks: int
    nodes: int
    groups: int        # groups that hold at least one rank
    n: int             # vector size in bytes: results are in multiples of it
    messages: int
    volume: Volume
    steps: tuple[Volume, ...] | None = None

    def in_n(self, value: int) -> float:
        return value / self.n if self.n else 0.0


def classes(trace: Trace, rank_node: np.ndarray, node_group: np.ndarray) -> np.ndarray:
    """0, 1 or 2 (intra-node, intra-group, inter-group) for each message."""
    ns = rank_node[trace.src]
    nd = rank_node[trace.dst]
    return (ns != nd).astype(np.int8) + (node_group[ns] != node_group[nd])


def count(trace: Trace, rank_node: np.ndarray, node_group: np.ndarray, per_step: bool = False) -> Traffic:
    """The trace's bytes on a placement: ``rank_node[r]`` is rank r's node,
    ``node_group[i]`` node i's group (both integer arrays)."""
    p = trace.key.ranks
    if rank_node.size != p:
        raise ValueError(f"placement has {rank_node.size} ranks, trace {p}")
    cls = classes(trace, rank_node, node_group)
    weights = trace.nbytes.astype(np.float64)
    volume = Volume.of(np.bincount(cls, weights=weights, minlength=3))
    steps = None
    if per_step:
        if trace.step is None:
            raise ValueError("per-step counts need a trace in messages format")
        nsteps = int(trace.step.max()) + 1 if trace.step.size else 0
        table = np.bincount(trace.step.astype(np.int64) * 3 + cls, weights=weights,
                            minlength=3 * nsteps).reshape(nsteps, 3)
        steps = tuple(Volume.of(row) for row in table)
    used = np.unique(rank_node)
    return Traffic(trace.key.collective, trace.key.algorithm, p, int(used.size),
                   int(np.unique(node_group[used]).size), trace.n, trace.messages, volume, steps)


def inter_group_bytes(trace: Trace, rank_group: np.ndarray) -> int:
    """Only the inter-group bytes, given each rank's group: the batch's inner loop."""
    return int(trace.nbytes[rank_group[trace.src] != rank_group[trace.dst]].sum())


def reduction_pct(baseline: int, other: int) -> float | None:
    """How much less inter-group traffic ``other`` has than ``baseline``, in %;
    None when the baseline has none."""
    if baseline <= 0:
        return None
    return 100.0 * (baseline - other) / baseline
