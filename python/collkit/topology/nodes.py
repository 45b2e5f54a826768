"""Virtual nodes: COLLKIT_RANKS_PER_NODE=k puts k consecutive ranks of
MPI_COMM_WORLD on each node, the last node short when k does not divide the
rank count (lib/core/nodes.c, ck_nodes_get; unset, a node is the ranks that
share memory). This module states the same rule for the tools that decide
before launching: the campaign plan skips the points that an algorithm
needing equal ranks per node (CK_REQUIRES_EQUAL_NODES) would refuse."""

from __future__ import annotations

import os

ENV = "COLLKIT_RANKS_PER_NODE"
INT_MAX = 2**31 - 1


def ranks_per_node(environ: dict[str, str] | None = None) -> int:
    """k from the environment, 0 when unset; ValueError when not a positive int."""
    text = (os.environ if environ is None else environ).get(ENV, "")
    if not text:
        return 0
    if not text.isdigit() or not 1 <= int(text) <= INT_MAX:
        raise ValueError(f"{ENV}={text}: not a positive integer")
    return int(text)


def node_sizes(ranks: int, k: int) -> list[int]:
    """Ranks on each virtual node, in node order."""
    if ranks < 1 or k < 1:
        raise ValueError("ranks and ranks per node must be positive")
    full, rest = divmod(ranks, k)
    return [k] * full + ([rest] if rest else [])


def misfit(ranks: int, environ: dict[str, str] | None = None) -> str:
    """Why an equal-nodes algorithm would refuse `ranks` under this environment
    ('' when it runs; unset means shared-memory nodes, known only at run time,
    and one machine is one node: it runs)."""
    try:
        k = ranks_per_node(environ)
    except ValueError as exc:
        return str(exc)
    if k and ranks % k:
        return (f"{ENV}={k}: {ranks} ranks make uneven nodes "
                f"(the rank count must be a multiple of {k})")
    return ""
