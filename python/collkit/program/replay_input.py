"""A `--trace` profile turned into what collkit-replay (tools/replay/) runs:
which calls, on which communicators, with which algorithm, after how much
computation. One home for that decision and for the files' format.

Text files in one directory, read by every rank (text: a few bytes a call,
readable when a replay goes wrong, and parsed with fscanf in C):

    replay.txt                       rank-<r>.txt (one per world rank)
    collkit-replay 1                 calls 3
    ranks 4                          0 1.5e-05        <- replay class, gap before it (s)
    comms 1                          2 0.0021
    comm 2 2 3                       0 3e-06
    classes 2
    class allreduce 0 8 double sum -1 0 library
    class bcast 2 65536 int8 - 0 0 binomial_doubling

`comm N m0 .. m(N-1)`: a communicator to rebuild, its members' world ranks in
the order of their ranks in it; comm index 0 is MPI_COMM_WORLD, 1
MPI_COMM_SELF, 2.. the listed ones. `class COLLECTIVE COMM BYTES DATATYPE OP
ROOT IN_PLACE CHOICE`: data movement runs on int8 (BYTES elements), "-" for no
op, -1 for no root, CHOICE "library" (SMPI's own collective) or a libcollkit
algorithm.

What is replayed, and how (docs/application-loop.md, "Replay"):

* classes of the eight collectives libcollkit implements, and MPI_Barrier, on
  world, self or a rebuilt communicator; a reduction needs a datatype collkit
  fills (int8 .. double) and sum, max, min or prod. Everything else (the
  v-collectives, scans, intercommunicators, user ops) is left out, with its
  profiled time, and its time inside the library folds into the next gap.
* a "c<L>x<N>" communicator is rebuilt when exactly N ranks call on it in the
  trace and world rank L is one of them; its ranks are ordered L first, then
  by world rank (the profile keeps no more of the order).
* gaps: the time from the end of a rank's previous replayed call (MPI_Init's
  end for the first) to the start of the next, from start_s and duration_s.
* a truncated trace (dropped > 0) ends at different calls on different ranks:
  per communicator only the instances every member holds are replayed, and an
  instance whose class differs between members ends that communicator's
  replay there (MPI requires the same order on every member)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.program.rules_choice import LIBRARY, LIBRARY_ALGORITHM, Choice, Rules, as_twins, choose_all
from collkit.program.profile_file import Profile, reduction

FORMAT = "collkit-replay"
VERSION = 1
WORLD, SELF = 0, 1
BARRIER = "barrier"     # replayed beside libcollkit's collectives (registry.COLLECTIVES)
SPLIT = re.compile(r"^c(\d+)x(\d+)$")


@dataclass(frozen=True)
class ReplayClass:
    index: int          # in profile.classes
    comm: int           # comm index
    choice: Choice


@dataclass(frozen=True)
class Plan:
    profile: Profile
    comms: tuple[tuple[str, tuple[int, ...]], ...]      # rebuilt: (label, members in comm-rank order)
    classes: tuple[ReplayClass, ...]                   # replayed, in replay-class order
    left_out: tuple[tuple[int, str], ...]              # (profile class index, why)
    calls: tuple[tuple[tuple[int, float], ...], ...]   # per world rank: (replay class, gap_s)
    measured: tuple[tuple[int, float], ...]            # per replay class: (calls, time) of the replayed calls,
                                                       # busiest rank, from the trace
    measured_span_s: float                             # latest end of a replayed call over the ranks
    notes: tuple[str, ...]                             # truncation and agreement remarks


def _why_not(c, ranks: int) -> str:
    if c.collective not in registry.COLLECTIVES and c.collective != BARRIER:
        return f"MPI_{c.collective.capitalize()} is not replayed (none of the eight collectives)"
    if c.comm == "inter":
        return "an intercommunicator"
    if c.bytes == 0 and c.collective != BARRIER:
        # Nothing moves; and SMPI 3.32's Open MPI selection picks its pipelined
        # bcast for them, which divides by zero (SIGFPE) on a count of 0.
        return "0 bytes: moves nothing"
    if c.comm == "world" and c.comm_size != ranks:
        return f"a world class of {c.comm_size} ranks in a {ranks}-rank profile"
    if reduction(c.collective):
        if c.dtype is None:
            return f"datatype {c.datatype} has no collkit equivalent"
        if c.op not in registry.SPEC_OPS:
            return f"op {c.op} is not replayed ({', '.join(registry.SPEC_OPS)})"
        if c.bytes % registry.datatype_size(c.dtype):
            return f"{c.bytes} B is not a whole number of {c.dtype}"
    return ""


def _members(profile: Profile, label: str, size: int) -> tuple[tuple[int, ...], str]:
    """The world ranks of a c<L>x<N> communicator in comm-rank order, or a reason."""
    m = SPLIT.match(label)
    if m is None or int(m.group(2)) != size:
        return (), f"communicator label '{label}' is not c<first world rank>x<size>"
    first = int(m.group(1))
    idx = {i for i, c in enumerate(profile.classes) if c.comm == label}
    seen = sorted(r.rank for r in profile.trace.ranks if any(call[0] in idx for call in r.calls))
    if len(seen) != size or first not in seen:
        return (), (f"communicator {label}: the trace shows {len(seen)} ranks calling on it, not the {size} "
                    f"it has (merged communicators, or a truncated trace)")
    return (first, *(r for r in seen if r != first)), ""


def plan(profile: Profile, rules: Rules | None) -> Plan:
    """The replay of a complete profile with a trace (profile_file.load(need_trace=True))."""
    trace = profile.trace
    assert trace is not None
    by_rank = {r.rank: r for r in trace.ranks}
    if sorted(by_rank) != list(range(profile.ranks)):
        raise UserError(f"{profile.path}: the trace holds {len(by_rank)} of the {profile.ranks} ranks; "
                        "profile again with `collkit profile --trace` and let every rank finish")
    left: dict[int, str] = {}
    comm_of: dict[int, int] = {}
    labels: dict[str, int | str] = {}      # label -> comm index, or why it cannot be rebuilt
    comms: list[tuple[str, tuple[int, ...]]] = []
    for i, c in enumerate(profile.classes):
        why = _why_not(c, profile.ranks)
        if not why and c.comm not in ("world", "self"):
            if c.comm not in labels:
                members, reason = _members(profile, c.comm, c.comm_size)
                labels[c.comm] = reason or 2 + len(comms)
                if not reason:
                    comms.append((c.comm, members))
            if isinstance(labels[c.comm], str):
                why = labels[c.comm]
            else:
                comm_of[i] = labels[c.comm]
        if why:
            left[i] = why
        elif c.comm == "world":
            comm_of[i] = WORLD
        elif c.comm == "self":
            comm_of[i] = SELF
    members_of = {WORLD: tuple(range(profile.ranks))} | {2 + k: m for k, (_, m) in enumerate(comms)}

    # per communicator (not self): the instances every member holds, with one class
    seqs = {r: [(i, call) for i, call in enumerate(by_rank[r].calls) if call[0] in comm_of]
            for r in by_rank}
    per_comm: dict[int, dict[int, list[int]]] = {}     # comm -> rank -> class indices in order
    for r, seq in seqs.items():
        for _, call in seq:
            ci = comm_of[call[0]]
            if ci != SELF:
                per_comm.setdefault(ci, {}).setdefault(r, []).append(call[0])
    keep: dict[int, int] = {}
    notes: list[str] = []
    dropped = sum(r.dropped for r in trace.ranks)
    if dropped:
        notes.append(f"the trace was truncated at {trace.max_calls_per_rank} calls per rank ({dropped} calls "
                     "not recorded): only the recorded calls are replayed")
    for ci, ranks in per_comm.items():
        lists = [ranks.get(r, []) for r in members_of[ci]]
        n = min(len(x) for x in lists)
        agree = next((j for j in range(n) if len({x[j] for x in lists}) > 1), n)
        keep[ci] = agree
        label = "world" if ci == WORLD else comms[ci - 2][0]
        if agree < n:
            notes.append(f"{label}: the ranks' calls differ at call {agree + 1} on it; replayed up to there")
        elif max(len(x) for x in lists) > n:
            notes.append(f"{label}: {n} calls held by every member replayed, "
                         f"{max(len(x) for x in lists) - n} recorded by only some ranks left out")

    order = sorted(comm_of)          # replay classes in profile order: time, largest first
    rc_of = {i: k for k, i in enumerate(order)}
    in_order = [profile.classes[i] for i in order]
    choices = as_twins(rules, in_order, choose_all(rules, in_order))
    classes = tuple(ReplayClass(index=i, comm=comm_of[i], choice=ch) for i, ch in zip(order, choices))
    # library:NAME is the library's own algorithm, switched per call by the preload (MPICH's CVARs):
    # replayed as libcollkit's algorithm of the same schedule where there is one (as_twins); SMPI
    # itself selects its collectives' algorithms per run (smpi/<collective>), under its own names
    twins = sorted({f"{ch.rule} as {ch.runs}" for ch in choices
                    if ch.rule.startswith(LIBRARY_ALGORITHM) and ch.runs != LIBRARY})
    if twins:
        notes.append(f"the rules choose the library's own algorithms, replayed as libcollkit's of the same "
                     f"message schedule (docs/algorithms.md, \"Name parity\"): {', '.join(twins)}")
    per_call = sorted({ch.rule for ch in choices if ch.rule.startswith(LIBRARY_ALGORITHM) and ch.runs == LIBRARY})
    if per_call:
        notes.append(f"the rules choose {', '.join(per_call)}: the library's own algorithm switched per call, "
                     "with no libcollkit algorithm of its schedule (or one the call cannot run), and SMPI "
                     "selects a collective's algorithm per run, under its own names; those classes are "
                     "replayed with SMPI's own collective, as the library")
    calls: list[tuple[tuple[int, float], ...]] = []
    m_calls = [0] * len(order)
    m_time = [0.0] * len(order)
    span = 0.0
    for r in range(profile.ranks):
        done: dict[int, int] = {}
        prev_end = 0.0
        out: list[tuple[int, float]] = []
        r_calls = [0] * len(order)
        r_time = [0.0] * len(order)
        for _, (k, start, dur) in seqs[r]:
            ci = comm_of[k]
            if ci != SELF:
                if done.get(ci, 0) >= keep.get(ci, 0):
                    continue
                done[ci] = done.get(ci, 0) + 1
            out.append((rc_of[k], max(0.0, start - prev_end)))
            prev_end = max(prev_end, start + dur)
            r_calls[rc_of[k]] += 1
            r_time[rc_of[k]] += dur
        calls.append(tuple(out))
        span = max(span, prev_end)
        m_calls = [max(a, b) for a, b in zip(m_calls, r_calls)]
        m_time = [max(a, b) for a, b in zip(m_time, r_time)]
    return Plan(profile=profile, comms=tuple(comms), classes=classes, left_out=tuple(sorted(left.items())),
                calls=tuple(calls), measured=tuple(zip(m_calls, m_time)), measured_span_s=span,
                notes=tuple(notes))


def _class_line(p: Plan, rc: ReplayClass) -> str:
    c = p.profile.classes[rc.index]
    dtype = c.dtype if reduction(c.collective) else "int8"
    op = c.op if reduction(c.collective) else "-"
    root = c.root if c.root is not None else -1
    return f"class {c.collective} {rc.comm} {c.bytes} {dtype} {op} {root} {int(c.in_place)} {rc.choice.runs}\n"


def write(p: Plan, directory: Path) -> None:
    """replay.txt and one rank-<r>.txt per rank into directory."""
    head = [f"{FORMAT} {VERSION}\n", f"ranks {p.profile.ranks}\n", f"comms {len(p.comms)}\n"]
    head += [f"comm {len(m)} {' '.join(map(str, m))}\n" for _, m in p.comms]
    head += [f"classes {len(p.classes)}\n"] + [_class_line(p, rc) for rc in p.classes]
    atomic.write_text(directory / "replay.txt", "".join(head))
    for r, calls in enumerate(p.calls):
        atomic.write_text(directory / f"rank-{r}.txt",
                          f"calls {len(calls)}\n" + "".join(f"{k} {gap!r}\n" for k, gap in calls))
