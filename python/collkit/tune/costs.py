"""The cost terms of each algorithm's schedule: T(p, n) = alpha a(p) + beta b(p) n + gamma c(p) n.

The one home of these terms. For a message of n bytes (as collkit-bench counts them:
the whole vector for bcast, reduce and allreduce, one rank's block for allgather,
alltoall, gather, scatter and reduce_scatter) on p ranks:

* a(p): messages on the critical path (latency terms);
* b(p): bytes sent on the critical path, per byte of n (bandwidth term);
* c(p): bytes reduced on the critical path, per byte of n (reduction term; 0 when
  nothing is reduced).

Where `traced` is set, the critical path is the busiest rank's sends, so a(p) is the
most messages any rank sends and b(p) n the most bytes any rank sends: exactly what
ck_trace reports for libcollkit's algorithm of that name, and
tests/python/test_tune_costs.py checks it at several p (at the p given by `exact`:
"any" or "pow2"). The other entries (trees whose depth is not one rank's sends,
pipelines, the libraries' own schedules without a libcollkit twin) come from the
schedule as docs/algorithms.md and the library sources describe it and are not traced.

Library-forced algorithms carry canonical names (backends/openmpi.py, mpich.py): a
name shared with libcollkit is the same schedule (docs/algorithms.md, "Name parity"),
so it has the same terms here. Names missing from this table have no model: they are
still decided where measured, never from a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable


@dataclass(frozen=True)
class Terms:
    a: float
    b: float
    c: float = 0.0


@dataclass(frozen=True)
class Entry:
    terms: Callable[[int], Terms]
    traced: bool          # a, b equal the busiest rank's sends (checked with ck_trace)
    exact: str            # "any" | "pow2": the rank counts at which `traced` holds exactly
    source: str           # where the schedule comes from


def lg(p: int) -> int:
    """ceil(log2 p)."""
    return max(0, (p - 1).bit_length())


def pow2_floor(p: int) -> int:
    return 1 << (p.bit_length() - 1) if p > 0 else 0


def _fold(p: int) -> tuple[int, int]:
    """(log2 p', 1 if p is not a power of two else 0): the non-power-of-two fold of
    recursive doubling and Rabenseifner adds one exchange of the whole vector."""
    q = pow2_floor(p)
    return q.bit_length() - 1, int(q != p)


def _rd_allreduce(p: int) -> Terms:
    k, e = _fold(p)
    return Terms(k + e, k + e, k + e)


def _rab_allreduce(p: int) -> Terms:
    k, e = _fold(p)
    q = 1 << k
    return Terms(2 * k + e, 2 * (q - 1) / q + e, (q - 1) / q + e)


def _ring_allreduce(p: int) -> Terms:
    return Terms(2 * (p - 1), 2 * (p - 1) / p, (p - 1) / p)


def _reduce_bcast(p: int) -> Terms:
    return Terms(2 * lg(p), 2 * lg(p), lg(p))


def _linear_allreduce(p: int) -> Terms:
    return Terms(2 * (p - 1), 2 * (p - 1), p - 1)


def _bcast_linear(p: int) -> Terms:
    return Terms(p - 1, p - 1)


def _bcast_tree(p: int) -> Terms:
    return Terms(lg(p), lg(p))


def _bcast_binary(p: int) -> Terms:
    depth = max(0, (p).bit_length() - 1)     # levels below the root of a complete binary tree
    return Terms(2 * depth, 2 * depth)


def _bcast_chain(p: int) -> Terms:
    return Terms(p - 1, 1)


def _bcast_scatter_rd(p: int) -> Terms:
    return Terms(2 * lg(p), 2 * (p - 1) / p)


def _bcast_scatter_ring(p: int) -> Terms:
    return Terms(lg(p) + p - 1, 2 * (p - 1) / p)


def _ag_ring(p: int) -> Terms:
    return Terms(p - 1, p - 1)


def _ag_log(p: int) -> Terms:
    return Terms(lg(p), p - 1)


def _ag_neighbor(p: int) -> Terms:
    return Terms(p // 2, p - 1)


def _ag_linear(p: int) -> Terms:
    # gather to rank 0, then a bcast of all p blocks (Open MPI)
    return Terms(2 * (p - 1), (p - 1) + p * lg(p))


def _rs_ring(p: int) -> Terms:
    return Terms(p - 1, p - 1, p - 1)


def _rs_halving(p: int) -> Terms:
    return Terms(lg(p), p - 1, p - 1)


def _a2a_direct(p: int) -> Terms:
    return Terms(p - 1, p - 1)


def _a2a_bruck(p: int) -> Terms:
    return Terms(lg(p), lg(p) * p / 2)


SCHEDULE = "schedule (docs/algorithms.md)"
LIBRARY = "the library's schedule (docs/algorithms.md, name parity; not traced)"

TABLE: dict[tuple[str, str], Entry] = {
    # allreduce
    ("allreduce", "recursive_doubling"): Entry(_rd_allreduce, True, "any", SCHEDULE),
    ("allreduce", "rabenseifner"): Entry(_rab_allreduce, True, "any", SCHEDULE),
    ("allreduce", "rabenseifner_halving"): Entry(_rab_allreduce, True, "any", SCHEDULE),
    ("allreduce", "ring"): Entry(_ring_allreduce, True, "any", SCHEDULE),
    ("allreduce", "swing_bandwidth"): Entry(_rab_allreduce, True, "pow2", SCHEDULE),
    ("allreduce", "bine_bandwidth"): Entry(_rab_allreduce, True, "pow2", SCHEDULE),
    ("allreduce", "reduce_bcast"): Entry(_reduce_bcast, False, "any", SCHEDULE + ": tree depth, not one rank's sends"),
    ("allreduce", "redscat_allgather"): Entry(_rab_allreduce, False, "any", LIBRARY),
    ("allreduce", "segmented_ring"): Entry(_ring_allreduce, False, "any", LIBRARY),
    ("allreduce", "mpich_ring"): Entry(_ring_allreduce, False, "any", LIBRARY),
    ("allreduce", "basic_linear"): Entry(_linear_allreduce, False, "any", LIBRARY),
    # bcast
    ("bcast", "linear"): Entry(_bcast_linear, True, "any", SCHEDULE),
    ("bcast", "binomial_doubling"): Entry(_bcast_tree, True, "any", SCHEDULE),
    ("bcast", "binomial_halving"): Entry(_bcast_tree, True, "any", SCHEDULE),
    ("bcast", "bine"): Entry(_bcast_tree, True, "pow2", SCHEDULE),
    ("bcast", "scatter_allgather_rd"): Entry(_bcast_scatter_rd, True, "pow2", SCHEDULE),
    ("bcast", "bine_scatter_allgather"): Entry(_bcast_scatter_rd, True, "pow2", SCHEDULE),
    ("bcast", "scatter_allgather_ring"): Entry(_bcast_scatter_ring, True, "pow2", SCHEDULE),
    ("bcast", "chain"): Entry(_bcast_chain, False, "any", SCHEDULE + ": a pipeline, depth p-1"),
    ("bcast", "scatter_allgather"): Entry(_bcast_scatter_rd, False, "any", LIBRARY),
    ("bcast", "ompi_scatter_allgather_ring"): Entry(_bcast_scatter_ring, False, "any", LIBRARY),
    ("bcast", "scatter_recursive_doubling_allgather"): Entry(_bcast_scatter_rd, False, "any", LIBRARY),
    ("bcast", "scatter_ring_allgather"): Entry(_bcast_scatter_ring, False, "any", LIBRARY),
    ("bcast", "binary_tree"): Entry(_bcast_binary, False, "any", LIBRARY),
    ("bcast", "tree"): Entry(_bcast_binary, False, "any", LIBRARY + " (MPICH's k-ary tree, k = 2)"),
    # allgather (n: one rank's block)
    ("allgather", "ring"): Entry(_ag_ring, True, "any", SCHEDULE),
    ("allgather", "bruck"): Entry(_ag_log, True, "any", SCHEDULE),
    ("allgather", "recursive_doubling"): Entry(_ag_log, True, "pow2", SCHEDULE),
    ("allgather", "neighbor_exchange"): Entry(_ag_neighbor, True, "pow2", SCHEDULE),
    ("allgather", "swing"): Entry(_ag_log, True, "pow2", SCHEDULE),
    ("allgather", "bine_permute"): Entry(_ag_log, True, "pow2", SCHEDULE),
    ("allgather", "two_proc"): Entry(_ag_ring, False, "any", LIBRARY),
    ("allgather", "linear"): Entry(_ag_linear, False, "any", LIBRARY),
    # reduce_scatter (n: one rank's block)
    ("reduce_scatter", "ring"): Entry(_rs_ring, True, "any", SCHEDULE),
    ("reduce_scatter", "recursive_halving"): Entry(_rs_halving, True, "pow2", SCHEDULE),
    # alltoall (n: one rank's block to one peer)
    ("alltoall", "linear"): Entry(_a2a_direct, True, "any", SCHEDULE),
    ("alltoall", "pairwise"): Entry(_a2a_direct, True, "any", SCHEDULE),
    ("alltoall", "bruck"): Entry(_a2a_bruck, True, "pow2", SCHEDULE),
    ("alltoall", "basic_linear"): Entry(_a2a_direct, False, "any", LIBRARY),
    ("alltoall", "linear_shift"): Entry(_a2a_direct, False, "any", LIBRARY + " (Open MPI's pairwise, SMPI's ring)"),
}


def entry(collective: str, algorithm: str) -> Entry | None:
    return TABLE.get((collective, algorithm))


@lru_cache(maxsize=None)
def terms(collective: str, algorithm: str, p: int) -> Terms | None:
    e = TABLE.get((collective, algorithm))
    return e.terms(p) if e is not None else None


def reduces(collective: str) -> bool:
    return collective in ("allreduce", "reduce", "reduce_scatter")


__all__ = ["Entry", "TABLE", "Terms", "entry", "lg", "pow2_floor", "reduces", "terms"]
