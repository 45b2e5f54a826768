"""Per-phase link loads of all-to-all exchanges on a fat tree FT(L; M1..ML).

For each algorithm, level l (1..L-1) and step, the largest number of messages
that leave any level-l subtree (up) and that enter one (down) in that step,
next to the lower bound B_min(l) of Prisacari et al. (ICS'13). Rank i sits on
leaf i. The messages are ck_trace's (the algorithms' C code run rank by rank),
never a model of them: this module only counts.

The step of a message is the index of the send among its sender's sends; the
phased exchanges (xor at p = 2^k, linear_shift, fattree_opt) send exactly once
per phase, so their step is the phase. The tree's radices reach fattree_opt
through COLLKIT_FATTREE in ck_trace's environment; those traces are never
cached, since the cache key does not hold the environment."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.common.errors import UserError
from collkit.topology.fattree import ENV, FatTree
from collkit.traffic.trace import Trace, TraceFailure, TraceKey, parse_traces


@dataclass(frozen=True)
class LevelLoad:
    algorithm: str
    level: int
    step: int | None      # None: the summary row (maximum over steps)
    max_up: int
    max_down: int
    bound: int            # B_min(level)
    subtree: int          # Pi_level, the leaves of one level-l subtree


def trace_messages(binary: Path, algorithm: str, tree: FatTree) -> Trace:
    """ck_trace's messages of alltoall/ALGORITHM at p = leaves, one int8 per block,
    with the tree in COLLKIT_FATTREE."""
    key = TraceKey("alltoall", algorithm, tree.leaves, 1, fmt="messages")
    env = dict(os.environ)
    env[ENV] = tree.text()
    try:
        done = subprocess.run([str(binary), *key.args()], capture_output=True, text=True, env=env,
                              timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run {binary}: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        raise UserError(f"--link-loads: {key.describe()} failed: {why}")
    got = parse_traces(done.stdout, "messages")
    if len(got) != 1 or isinstance(got[0], TraceFailure):
        raise UserError(f"--link-loads: {key.describe()} gave no trace")
    return got[0]


def loads(trace: Trace, tree: FatTree) -> list[LevelLoad]:
    """Per level and step, then the summary row per level; levels 1..L-1."""
    assert trace.step is not None, "link loads need the messages format"
    alg, out = trace.key.algorithm, []
    steps = int(trace.step.max()) + 1 if trace.step.size else 0
    for level in range(1, len(tree.radices)):
        size = tree.subtree_size(level)
        nsub = tree.leaves // size
        s_sub, d_sub = trace.src // size, trace.dst // size
        leaving = s_sub != d_sub
        # (step, subtree) -> messages, for the ones leaving their subtree.
        up = np.zeros((steps, nsub), dtype=np.int64)
        down = np.zeros((steps, nsub), dtype=np.int64)
        np.add.at(up, (trace.step[leaving], s_sub[leaving]), 1)
        np.add.at(down, (trace.step[leaving], d_sub[leaving]), 1)
        bound = tree.bmin(level)
        per_up, per_down = up.max(axis=1), down.max(axis=1)
        for k in range(steps):
            out.append(LevelLoad(alg, level, k, int(per_up[k]), int(per_down[k]), bound, size))
        out.append(LevelLoad(alg, level, None, int(per_up.max(initial=0)), int(per_down.max(initial=0)),
                             bound, size))
    return out


def csv_text(rows: list[LevelLoad]) -> str:
    lines = ["algorithm,level,step,max_up,max_down,bound,subtree"]
    for r in rows:
        step = "max" if r.step is None else str(r.step)
        lines.append(f"{r.algorithm},{r.level},{step},{r.max_up},{r.max_down},{r.bound},{r.subtree}")
    return "\n".join(lines)


def table_text(rows: list[LevelLoad], tree: FatTree) -> str:
    """The summary rows only (the CSV has every step)."""
    head = (f"FT({len(tree.radices)}; {tree.text()}): {tree.leaves} leaves, rank i on leaf i; "
            "messages leaving (up) / entering (down) a level-l subtree, worst step")
    out = [head, f"{'algorithm':<16} {'level':>5} {'subtree':>8} {'max_up':>7} {'max_down':>8} {'B_min':>6}"]
    for r in rows:
        if r.step is None:
            out.append(f"{r.algorithm:<16} {r.level:>5} {r.subtree:>8} {r.max_up:>7} {r.max_down:>8} {r.bound:>6}")
    return "\n".join(out)


def json_rows(rows: list[LevelLoad]) -> list[dict]:
    return [{"algorithm": r.algorithm, "level": r.level, "step": r.step, "max_up": r.max_up,
             "max_down": r.max_down, "bound": r.bound, "subtree": r.subtree} for r in rows]
