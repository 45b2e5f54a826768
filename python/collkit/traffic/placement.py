"""Rank placement: which node each MPI rank runs on.

The nodes of an allocation, in the order it lists them, receive ranks by one
of three rules:

* ``block`` (the default): ranks 0..K-1 on the first node, K..2K-1 on the
  second, ... with K = ``--ppn`` (default 1); a host listed twice counts once,
  where it first appears;
* ``cyclic``: rank r on node r mod N;
* ``explicit``: rank i on the allocation's i-th entry, as written (a PICO CSV
  or a hostfile that repeats hosts is a rank map). ``--ppn`` does not apply.

Without ``--placement``, an allocation that repeats a host is read as explicit
(it already says where each rank goes) unless ``--ppn`` is given; any other is
read as block."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collkit.common.errors import UserError

PLACEMENTS = ("block", "cyclic", "explicit")


@dataclass(frozen=True)
class Placement:
    rank_node: np.ndarray  # node index (into the topology) of each rank
    mode: str
    ppn: int

    @property
    def ranks(self) -> int:
        return int(self.rank_node.size)

    @property
    def nodes(self) -> int:
        return int(np.unique(self.rank_node).size)


def _first_appearance(entries: np.ndarray) -> np.ndarray:
    _, first = np.unique(entries, return_index=True)
    return entries[np.sort(first)]


def place(entries: np.ndarray, mode: str | None = None, ppn: int | None = None,
          ranks: int | None = None) -> Placement:
    """Ranks over an allocation's entries (node indices, in the allocation's order).

    ``ranks`` (block and cyclic only) caps the rank count below nodes x ppn:
    ``--ranks P`` on ceil(P/ppn) nodes leaves the last node partly filled."""
    entries = np.asarray(entries, dtype=np.int32)
    if entries.size == 0:
        raise UserError("the allocation has no nodes")
    if ppn is not None and ppn < 1:
        raise UserError(f"--ppn must be at least 1, not {ppn}")
    nodes = _first_appearance(entries)
    if mode is None:
        mode = "explicit" if nodes.size < entries.size and ppn is None else "block"
    if mode not in PLACEMENTS:
        raise UserError(f"unknown placement '{mode}'; choose one of {', '.join(PLACEMENTS)}")
    if mode == "explicit":
        if ppn not in (None, 1):
            raise UserError("--ppn does not apply to explicit placement: the allocation lists every rank")
        return Placement(entries, "explicit", 1)
    k = ppn or 1
    total = nodes.size * k
    p = total if ranks is None else ranks
    if not 1 <= p <= total:
        raise UserError(f"{p} ranks do not fit {nodes.size} nodes x {k} per node")
    r = np.arange(p)
    index = r // k if mode == "block" else r % nodes.size
    return Placement(nodes[index], mode, k)
