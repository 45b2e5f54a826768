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
cached, since the cache key does not hold the environment.

Subtree counts say nothing about which of a subtree's physical uplinks a
message takes. `link_loads` follows SimGrid 3.32's FAT_TREE routing
(FatTreeZone::get_local_route) on an XGFT(L; m; w; p) instead and counts the
messages per physical link and step: going up, a level-l element takes its
parent port (pos / prod_{i<l} w_i p_i) mod (w_l p_l), pos = the destination
host's position (D-mod-k); going down, a switch takes parallel link
pos_src mod p_l towards the destination's child (S-mod-k over parallel links)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.common.errors import UserError
from collkit.topology.fattree import ENV, FatTree
from collkit.topology.synthetic import FatTree as Xgft
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


@dataclass(frozen=True)
class PhysicalLoad:
    """Messages per physical link under SimGrid's D-mod-k routing."""
    algorithm: str
    level: int            # links between level-l switches and their level-(l+1) parents
    step: int | None      # None: the summary row (maximum over steps)
    max_up: int           # most messages on one upward link of this level in the step
    max_down: int         # most messages on one downward link into a level-l switch
    spread: int           # ceil(most messages leaving or entering one level-l subtree / its uplinks):
    #                       the busiest link's load had the routing spread them evenly
    links: int            # uplinks of one level-l subtree (its level-l switches x w_{l+1} x p_{l+1})


def parse_xgft(text: str) -> Xgft:
    """SimGrid's FAT_TREE topo_parameters 'L;M1,..;W1,..;P1,..' (the parallel
    counts may be left out: 1 each); UserError naming --xgft otherwise."""
    parts = text.split(";")
    try:
        if len(parts) not in (3, 4) or not parts[0].isdigit():
            raise ValueError
        vecs = [tuple(int(v) for v in p.split(",")) for p in parts[1:]]
        if any(len(v) != int(parts[0]) for v in vecs) or any(x < 1 for v in vecs for x in v):
            raise ValueError
    except ValueError:
        raise UserError(f"--xgft {text!r}: expected 'L;M1,..,ML;W1,..,WL[;P1,..,PL]' with L positive "
                        "integers in each list, e.g. '2;16,8;1,8;1,1'") from None
    try:
        return Xgft(vecs[0], vecs[1], vecs[2] if len(vecs) == 3 else ())
    except UserError as exc:
        raise UserError(f"--xgft {text!r}: {exc}") from None


def _digits(x: np.ndarray, radices: tuple[int, ...]) -> np.ndarray:
    """x in the mixed base `radices`, least significant first: (len(x), len(radices))."""
    out = np.empty((x.size, len(radices)), dtype=np.int64)
    for i, r in enumerate(radices):
        out[:, i] = x % r
        x = x // r
    return out


def _switch_index(label: np.ndarray, level: int, xgft: Xgft) -> np.ndarray:
    """Index of a level-`level` element among its level from its SimGrid label:
    digits below the level have radix w, the others radix m (generate_labels)."""
    idx = np.zeros(label.shape[0], dtype=np.int64)
    weight = 1
    for i in range(xgft.levels):
        radix = xgft.up[i] if i < level else xgft.down[i]
        idx += label[:, i] * weight
        weight *= radix
    return idx


def _nodes_at(level: int, xgft: Xgft) -> int:
    n = 1
    for i in range(xgft.levels):
        n *= xgft.up[i] if i < level else xgft.down[i]
    return n


def link_loads(trace: Trace, xgft: Xgft) -> list[PhysicalLoad]:
    """Per level (1..L-1) and step, the busiest physical up and down link of
    that level under SimGrid's routing, then the summary row per level.
    Rank i is host i (one rank per host)."""
    assert trace.step is not None, "link loads need the messages format"
    L, m, w, par = xgft.levels, xgft.down, xgft.up, xgft.parallel
    alg = trace.key.algorithm
    steps = int(trace.step.max()) + 1 if trace.step.size else 0
    src, dst, step = trace.src.astype(np.int64), trace.dst.astype(np.int64), trace.step.astype(np.int64)
    remote = src != dst          # a host's own block takes the loopback
    src, dst, step = src[remote], dst[remote], step[remote]
    dlab = _digits(dst, m)
    # Lowest level whose subtree holds both ends: the route turns there.
    top = np.zeros(src.size, dtype=np.int64)
    span = 1
    for lev in range(L):
        top[src // span != dst // span] = lev + 1
        span *= m[lev]
    up_counts: dict[int, np.ndarray] = {}
    down_counts: dict[int, np.ndarray] = {}
    # Up: the labels of the elements the messages sit on, starting at the hosts.
    lab = _digits(src.copy(), m)
    below = 1                    # prod_{i<lev} w_i p_i
    for lev in range(L):
        ports = w[lev] * par[lev]
        climbing = top > lev
        d = (dst // below) % ports
        if lev >= 1:
            link = _switch_index(lab, lev, xgft) * ports + d
            nlinks = _nodes_at(lev, xgft) * ports
            key = step[climbing] * nlinks + link[climbing]
            up_counts[lev] = np.bincount(key, minlength=steps * nlinks).reshape(steps, nlinks)
        lab[climbing, lev] = d[climbing] % w[lev]
        below *= ports
    # Down: from the turning switch to the host; at a level-l switch the child
    # towards the destination, over parallel link src mod p_{l-1}.
    for lev in range(L, 0, -1):
        descending = top >= lev
        ports = m[lev - 1] * par[lev - 1]
        if lev - 1 >= 1:
            # Count on the link into the level-(lev-1) switch, identified by its
            # parent and the parent's child port.
            port = dlab[:, lev - 1] + (src % par[lev - 1]) * m[lev - 1]
            link = _switch_index(lab, lev, xgft) * ports + port
            nlinks = _nodes_at(lev, xgft) * ports
            key = step[descending] * nlinks + link[descending]
            down_counts[lev - 1] = np.bincount(key, minlength=steps * nlinks).reshape(steps, nlinks)
        lab[descending, lev - 1] = dlab[descending, lev - 1]
    out = []
    for lev in range(1, L):
        size = int(np.prod(m[:lev]))
        nsub = int(np.prod(m)) // size
        s_sub, d_sub = src // size, dst // size
        leaving = s_sub != d_sub
        per_sub = np.zeros((steps, nsub), dtype=np.int64)
        np.add.at(per_sub, (step[leaving], s_sub[leaving]), 1)
        into = np.zeros((steps, nsub), dtype=np.int64)
        np.add.at(into, (step[leaving], d_sub[leaving]), 1)
        switches = int(np.prod(w[1:lev])) if lev > 1 else 1
        links = switches * w[lev] * par[lev]
        spread = -(-np.maximum(per_sub.max(axis=1, initial=0), into.max(axis=1, initial=0)) // links)
        ups = up_counts[lev].max(axis=1, initial=0)
        downs = down_counts[lev].max(axis=1, initial=0)
        for k in range(steps):
            out.append(PhysicalLoad(alg, lev, k, int(ups[k]), int(downs[k]), int(spread[k]), links))
        out.append(PhysicalLoad(alg, lev, None, int(ups.max(initial=0)), int(downs.max(initial=0)),
                                int(spread.max(initial=0)), links))
    return out


def physical_csv_text(rows: list[PhysicalLoad]) -> str:
    lines = ["algorithm,level,step,max_up,max_down,spread,links"]
    for r in rows:
        step = "max" if r.step is None else str(r.step)
        lines.append(f"{r.algorithm},{r.level},{step},{r.max_up},{r.max_down},{r.spread},{r.links}")
    return "\n".join(lines)


def physical_table_text(rows: list[PhysicalLoad], xgft: Xgft) -> str:
    """Summary rows only; worst step of each level."""
    head = (f"XGFT({xgft.topo_parameters()}) under SimGrid's D-mod-k routing, rank i on host i: "
            "messages on the busiest physical uplink (up) / downlink (down) of a level, worst step; "
            "spread = the busiest link's load had every subtree's messages been spread evenly over its links")
    out = [head, f"{'algorithm':<16} {'level':>5} {'links':>6} {'max_up':>7} {'max_down':>8} {'spread':>6}"]
    for r in rows:
        if r.step is None:
            out.append(f"{r.algorithm:<16} {r.level:>5} {r.links:>6} {r.max_up:>7} {r.max_down:>8} {r.spread:>6}")
    return "\n".join(out)


def physical_json_rows(rows: list[PhysicalLoad]) -> list[dict]:
    return [{"algorithm": r.algorithm, "level": r.level, "step": r.step, "max_up": r.max_up,
             "max_down": r.max_down, "spread": r.spread, "links": r.links} for r in rows]
