"""Allocations drawn as a busy machine's scheduler would give them.

A simulated job on an idle machine sits on a block of consecutive nodes; the
Bine paper's jobs did not: the scheduler gave them whatever was free on a
shared machine, spread over several groups. This module draws such an
allocation, reproducibly, for a platform's ``[simgrid] allocation = { draw =
"scheduler", seed = S }`` (collkit.simulation.settings) and for the traffic
benchmark's synthetic jobs (scripts/gen_allocations.py).

The model (docs/topologies.md, "Drawn allocations", has the measurements):

* the machine's nodes, in id order, are cut into runs of geometric length
  (mean ``run`` nodes); each run is busy (held by another job) with
  probability ``busy``, so the free nodes are runs with gaps between them;
  where fewer nodes are free than the job needs, busy runs are freed at random
  (jobs ending) until enough are;
* the job gets the next ``size`` free nodes in id order from a random free node
  (first fit, wrapping round);
* then a fraction ``scatter`` of them is swapped for random other free nodes.

A draw depends only on (seed, machine name and size, node count): a rerun
gives the same hosts, and two node counts of one campaign get independent
draws (their generators are seeded apart), as two separate jobs would."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from collkit.common.errors import UserError, did_you_mean

KINDS = ("scheduler",)
PARAMETERS = ("busy", "run", "scatter")
KEYS = ("draw", "seed") + PARAMETERS
# Defaults from the six real Leonardo allocations (data/leonardo; measured by
# scripts/alloc_stats.py, numbers in docs/topologies.md): their nodes are
# almost never neighbours (mean run of consecutive node ids 1.0-1.08), and a
# 32-node job already spans 13 of the 19 booster cells: so about 1 node in
# 100 is free, in runs of one node, and nothing is scattered beyond first fit.
DEFAULTS = {"busy": 0.99, "run": 1.0, "scatter": 0.0}
# Per preset where the paper says otherwise: its MareNostrum 5 jobs spanned 1
# to 8 subtrees of 160 nodes (data/bine-paper/tables.md), far more compact than
# Leonardo's; busy = 0.3 in runs of 160 nodes gives 1 subtree at 4-32 nodes and
# 7-11 (mean 8.4) at 1,024 (scripts/alloc_stats.py draw marenostrum5-like).
MACHINE_DEFAULTS = {"marenostrum5-like": {"busy": 0.3, "run": 160.0}}


def defaults(machine: str) -> dict[str, float]:
    return {**DEFAULTS, **MACHINE_DEFAULTS.get(machine, {})}


def free_mask(rng: np.random.Generator, n: int, size: int, mean_run: float, busy_prob: float) -> np.ndarray:
    """Which of n nodes are free: runs of geometric length (mean mean_run),
    each busy with probability busy_prob; busy runs freed at random until at
    least `size` nodes are free."""
    lengths = rng.geometric(1.0 / mean_run, size=n)  # more runs than needed; cut below
    starts = np.concatenate([[0], np.cumsum(lengths)])
    starts = starts[starts < n]
    busy_runs = rng.random(starts.size) < busy_prob
    run_of_node = np.searchsorted(starts, np.arange(n), side="right") - 1
    free = ~busy_runs[run_of_node]
    missing = size - int(free.sum())
    if missing > 0:
        order = rng.permutation(np.flatnonzero(busy_runs))
        # free busy runs in that order until enough nodes are free: the first
        # prefix of the order whose runs hold `missing` nodes (one pass, not
        # one pass over the machine per run freed)
        lengths_in_order = np.bincount(run_of_node, minlength=starts.size)[order]
        last = int(np.searchsorted(np.cumsum(lengths_in_order), missing))
        free[np.isin(run_of_node, order[:last + 1])] = True
    return free


def first_fit(rng: np.random.Generator, free: np.ndarray, size: int,
              scatter: float | tuple[float, float]) -> np.ndarray:
    """`size` node indices from the free mask: the next free ones from a random
    free node, then a fraction of them swapped for random other free nodes.
    `scatter` is that fraction, or a (low, high) range it is drawn from
    uniformly (the traffic benchmark's per-job spread); sorted indices."""
    idx = np.flatnonzero(free)
    start = rng.integers(idx.size)
    chosen = idx[(start + np.arange(size)) % idx.size]
    fraction = rng.uniform(*scatter) if isinstance(scatter, tuple) else scatter
    count = int(round(fraction * size))
    others = np.setdiff1d(idx, chosen, assume_unique=True)
    count = min(count, others.size)
    if count:
        out = rng.choice(size, count, replace=False)
        chosen[out] = rng.choice(others, count, replace=False)
    return np.sort(chosen)


@dataclass(frozen=True)
class Draw:
    """`[simgrid] allocation = { draw = "scheduler", seed = S, ... }`."""

    seed: int
    busy: float = DEFAULTS["busy"]
    run: float = DEFAULTS["run"]
    scatter: float = DEFAULTS["scatter"]
    kind: str = "scheduler"

    def describe(self) -> dict[str, Any]:
        return {"draw": self.kind, "seed": self.seed, "busy": self.busy, "run": self.run, "scatter": self.scatter}

    def generator(self, machine: str, machine_nodes: int, nodes: int) -> np.random.Generator:
        # crc32 rather than hash(): Python salts str hashes per process
        tag = zlib.crc32(f"{machine}:{machine_nodes}".encode())
        return np.random.default_rng([self.seed, tag, nodes])

    def nodes(self, machine: str, machine_nodes: int, nodes: int) -> list[int]:
        """Indices (0 .. machine_nodes-1, sorted) of a job of `nodes` nodes."""
        if nodes > machine_nodes:
            raise UserError(f"a job of {nodes} nodes does not fit machine {machine}: it has {machine_nodes} nodes; "
                            f"use at most {machine_nodes} nodes (ranks / ppn)")
        rng = self.generator(machine, machine_nodes, nodes)
        free = free_mask(rng, machine_nodes, nodes, self.run, self.busy)
        return [int(i) for i in first_fit(rng, free, nodes, self.scatter)]


def parse(table: object, where: str, machine: str = "") -> Draw:
    """The allocation table of a platform file; `where` names the file for
    errors; parameters not given take the machine's defaults."""
    key = f"{where}: [simgrid] allocation"
    if not isinstance(table, dict):
        raise UserError(f"{key} must be a file name or a table {{ draw = \"scheduler\", seed = N }}")
    for k in table:
        if k not in KEYS:
            raise UserError(f"{key}: unknown key '{k}'{did_you_mean(k, KEYS)}; allowed: {', '.join(KEYS)}")
    kind = table.get("draw")
    if kind not in KINDS:
        extra = did_you_mean(str(kind), KINDS) if isinstance(kind, str) else ""
        raise UserError(f"{key}: draw = {kind!r}{extra}; give draw = \"scheduler\" (the only kind)")
    seed = table.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserError(f"{key}: seed = {seed!r}; give a non-negative integer, e.g. seed = 1")
    values = defaults(machine)
    for name in PARAMETERS:
        if name not in table:
            continue
        v = table[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise UserError(f"{key}: {name} = {v!r} is not a finite number; {_RANGES[name][1]}")
        if not _RANGES[name][0](v):
            raise UserError(f"{key}: {name} = {v!r} is out of range; {_RANGES[name][1]}")
        values[name] = float(v)
    return Draw(seed=seed, **values)


# (check, the fix) per parameter: one line each in the errors above
_RANGES = {
    "busy": (lambda v: 0 <= v < 1, "give 0 <= busy < 1 (the share of the machine's runs held by other jobs)"),
    "run": (lambda v: 1 <= v <= 1e6, "give 1 <= run <= 1e6 (mean length in nodes of a busy or free run)"),
    "scatter": (lambda v: 0 <= v <= 1, "give 0 <= scatter <= 1 (the share of the job's nodes placed at random)"),
}


def stats(nodes: list[int], group_of, order: dict[int, int] | None = None) -> dict[str, Any]:
    """How spread one allocation is: groups spanned, the largest group's share,
    and runs of neighbouring nodes (consecutive positions in `order`, the
    map's node order; the indices themselves when None)."""
    pos = sorted(order[i] for i in nodes) if order is not None else sorted(nodes)
    runs = 1 + sum(1 for a, b in zip(pos, pos[1:]) if b != a + 1) if pos else 0
    per: dict[Any, int] = {}
    for i in nodes:
        g = group_of(i)
        per[g] = per.get(g, 0) + 1
    return {"nodes": len(nodes), "groups": len(per), "largest_group_share": max(per.values()) / len(nodes),
            "runs": runs, "mean_run": len(nodes) / runs}
