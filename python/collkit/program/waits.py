"""Waiting and working: the one definition of how one collective call's time
at each rank splits into what the program made it wait for and what the
collective itself cost (issue #41). The profile (from traced or sampled calls
on one clock) and the campaign (from the per-rank arrival and exit planes of
collkit-bench) both split with these functions, so the two numbers a
prediction adds come from the same rule.

A rank r arrives at a_r and leaves at e_r (seconds, one clock for all ranks
of the call). It cannot finish before the ranks its result depends on have
arrived: its dependence set D(r). Then

    waiting_r = clip(max(a_d for d in D(r)) - a_r, 0, e_r - a_r)
    working_r = (e_r - a_r) - waiting_r

so waiting + working is always the rank's time in the call, neither is
negative, and waiting is the program's imbalance (what no algorithm choice
can remove), working what an algorithm choice can change.

D(r), by what the collective's result at r needs:
* every rank's data (allreduce, allgather, allgatherv, alltoall, alltoallv,
  reduce_scatter, reduce_scatter_v, barrier): all ranks;
* the root's data (bcast, scatter, scatterv): the root and r. A non-root
  that arrives before the root waits for it; it does not wait for other
  non-roots, even where a tree makes it forward through them: that part is
  the algorithm's, so working;
* everyone's data at the root (reduce, gather, gatherv): all ranks at the
  root; at a non-root only r itself (it only gives: whatever holds it there
  is the algorithm's);
* a prefix (scan, exscan): ranks 0..r.

A call's working time is the most working time of any rank: the span an
algorithm needs once the program has let it start (what collkit-bench's
synchronised median measures, the slowest rank's time after a barrier)."""

from __future__ import annotations

from collections.abc import Sequence

ALL = ("allreduce", "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_v",
       "barrier")
FROM_ROOT = ("bcast", "scatter", "scatterv")
TO_ROOT = ("reduce", "gather", "gatherv")
PREFIX = ("scan", "exscan")


def depends_on(collective: str, rank: int, size: int, root: int | None) -> range | tuple[int, ...]:
    """D(rank): the ranks whose arrival rank's result waits for."""
    if collective in FROM_ROOT:
        return (rank,) if root is None or root == rank else (root, rank)
    if collective in TO_ROOT:
        return range(size) if root is None or root == rank else (rank,)
    if collective in PREFIX:
        return range(rank + 1)
    if collective in ALL:
        return range(size)
    raise ValueError(f"no dependence rule for collective {collective!r}")


def split(collective: str, root: int | None, arrivals: Sequence[float],
          exits: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per rank (waiting_s, working_s) of one call; arrivals[r], exits[r] on one clock."""
    size = len(arrivals)
    if len(exits) != size:
        raise ValueError("one arrival and one exit per rank")
    last_all = max(arrivals) if size else 0.0
    waiting, working = [], []
    for r in range(size):
        dep = depends_on(collective, r, size, root)
        gate = last_all if isinstance(dep, range) and len(dep) == size else max(arrivals[d] for d in dep)
        inside = max(0.0, exits[r] - arrivals[r])
        w = min(max(0.0, gate - arrivals[r]), inside)
        waiting.append(w)
        working.append(inside - w)
    return waiting, working


def call_working(collective: str, root: int | None, arrivals: Sequence[float], exits: Sequence[float]) -> float:
    """The call's working time: the most any rank worked."""
    return max(split(collective, root, arrivals, exits)[1], default=0.0)
