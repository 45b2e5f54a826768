"""Each profiled call matched across the ranks of its communicator and its
time split into waiting and working (issue #41), aggregated per class into
profile_file.ClassSplit. The rule of the split is waits.py's; this module
only finds, for every call every rank kept, each rank's arrival and exit on
one clock (rank 0's) and adds up what waits.split says.

* Which calls: each rank's trace when every rank kept one and none dropped a
  call (it holds every call: stride 1), else each rank's sample (every
  stride-th call of each communicator, over the whole run: a trace that
  stopped at its bound would speak for the run's first calls only).
* Matching: a call is (communicator label, instance, seq); it is used when
  every rank of the communicator kept it (in the sample, the calls whose seq
  is a multiple of the largest stride among those ranks) and all name the
  same class. Any other kept call is counted as unmatched.
* Scaling: a rank's waiting over all its calls in a class is its time in the
  class (its rank file's time_s) times the waiting share of its matched
  calls, so waiting + working is the rank's time. The class's waiting_s and
  working_s are its busiest rank's (the most time in the class, as
  CallClass.time_max_s), among the ranks with matched calls.
* The clocks: ranks on rank 0's node read rank 0's clock; elsewhere each
  offset is known to within its error_s, so an arrival difference between
  two ranks to within the sum of their bounds. Where that sum is not below
  the median duration of the busiest rank's matched calls, the split could
  put anything from none to all of a call into waiting: it is left out
  (split None, split_reason says so) rather than reported as a number.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from collkit.program import waits
from collkit.library import registry
from collkit.program.profile_file import CallClass, ClassSplit, Clock, RankSplit
from collkit.program.rank_files import Call, RankFile, merged_key



def _quantiles() -> tuple[float, ...]:
    """0, 0.1, ..., 1: the skew's quantiles (registry.skew_quantiles)."""
    n = registry.skew_quantiles()
    return tuple(i / (n - 1) for i in range(n))


class _Kept(NamedTuple):
    """One rank's kept call, on rank 0's clock (a tuple: a trace has millions)."""
    world_rank: int
    cls: int               # index into the merged classes
    arrival_s: float
    exit_s: float
    gap_s: float | None    # from this rank's previous profiled call's exit; None when not known


@dataclass
class _PerRank:
    """What one (comm rank, world rank) of a class gathered over its matched calls."""
    waiting: float = 0.0
    working: float = 0.0
    calls: int = 0
    last: int = 0
    skews: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)


def clock_of(finals: dict[int, RankFile]) -> Clock | None:
    """How the ranks' clocks were mapped; None when a rank wrote no clock data."""
    clocks = [f.clock for f in finals.values()]
    if not clocks or any(c is None for c in clocks):
        return None
    return Clock(methods=tuple(sorted({c.method for c in clocks})), error_bound_s=max(c.error_s for c in clocks),
                 nodes=len({c.node for c in clocks}))


def _source(finals: dict[int, RankFile]) -> str:
    whole = all(f.trace is not None and f.trace.dropped == 0 for f in finals.values())
    return "trace" if whole else "sample"


def _rows(f: RankFile, source: str) -> tuple[Call, ...]:
    return f.trace.calls if source == "trace" else f.sample.calls


def _gaps(rows: tuple[Call, ...], exact: bool) -> list[float | None]:
    """Per row (in the rank's call order) the time since the previous row's
    exit: only when the rows are every call (exact), as a thinned sample's
    previous row is not the previous call."""
    out: list[float | None] = [None] * len(rows)
    if exact:
        order = sorted(range(len(rows)), key=lambda i: rows[i].start_s)
        for prev, i in zip(order, order[1:]):
            out[i] = max(0.0, rows[i].start_s - (rows[prev].start_s + rows[prev].duration_s))
    return out


def _missing_text(missing: list[int]) -> str:
    shown = ", ".join(map(str, missing[:8])) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    return f"rank{'s' if len(missing) > 1 else ''} {shown} wrote no final file"


def split_classes(finals: dict[int, RankFile], classes: tuple[CallClass, ...],
                  size: int) -> tuple[tuple[CallClass, ...], Clock | None]:
    """classes (rank_files.merge's, from the same finals) with their split
    or the reason there is none, and the run's clock; size: the world's ranks."""
    clock = clock_of(finals)
    if clock is None:
        why = ("no rank files at MPI_Finalize" if not finals else
               "the ranks wrote no clock data (rank files of version 1: a preload from before issue #41)")
        return tuple(replace(c, split=None, split_reason=why) for c in classes), None
    index = {merged_key(c): i for i, c in enumerate(classes)}
    source = _source(finals)
    # per communicator (label, instance): the largest stride of the ranks that hold it
    stride: dict[tuple[str, int], int] = {}
    if source == "sample":
        for f in finals.values():
            for comm in f.comms:
                key = (comm.label, comm.instance)
                stride[key] = max(stride.get(key, 1), f.sample.stride)
    groups: dict[tuple[str, int, int], dict[int, list[_Kept]]] = {}
    for world_rank, f in finals.items():
        to_merged = [index[c.key] for c in f.classes]
        rows = _rows(f, source)
        exact = source == "trace" or f.sample.stride == 1
        for row, gap in zip(rows, _gaps(rows, exact)):
            comm = f.comms[row.comm]
            if comm.label == "inter" or row.seq % stride.get((comm.label, comm.instance), 1):
                continue
            cls = to_merged[row.cls]
            clk = f.clock
            kept = _Kept(world_rank, cls, clk.to_reference(row.start_s), clk.to_reference(row.start_s + row.duration_s),
                         gap)
            groups.setdefault((comm.label, comm.instance, row.seq), {}).setdefault(comm.rank, []).append(kept)
    matched: list[list[list[_Kept]]] = [[] for _ in classes]
    unmatched = [0] * len(classes)
    disagree = [0] * len(classes)
    class_stride = [1] * len(classes)     # the largest stride among the communicators of its matched calls
    for (label, instance, _), members in groups.items():
        kept = [k for ks in members.values() for k in ks]
        cls = {k.cls for k in kept}
        n = classes[kept[0].cls].comm_size
        if len(cls) == 1 and set(members) == set(range(n)) and len(kept) == n:
            matched[kept[0].cls].append([members[r][0] for r in range(n)])
            class_stride[kept[0].cls] = max(class_stride[kept[0].cls], stride.get((label, instance), 1))
            continue
        for k in kept:
            unmatched[k.cls] += 1
            disagree[k.cls] += len(cls) > 1
    missing = [r for r in range(size) if r not in finals]
    # each rank's time per merged class, summed once (per class and rank it
    # would be classes x classes: 2,048 classes took half a minute)
    times: dict[int, dict[tuple, float]] = {}
    for world_rank, f in finals.items():
        per_key = times.setdefault(world_rank, {})
        for rc in f.classes:
            per_key[rc.key] = per_key.get(rc.key, 0.0) + rc.time_s
    out = []
    for i, c in enumerate(classes):
        if c.comm == "inter":
            out.append(replace(c, split=None, split_reason="calls on an intercommunicator are not matched across "
                                                           "its two groups"))
            continue
        if not matched[i]:
            if missing:
                why = f"no call was kept by every rank of its communicator ({_missing_text(missing)})"
            elif disagree[i]:
                why = "its ranks name different classes for the same calls"
            elif unmatched[i]:
                why = "no call was kept by every rank of its communicator"
            else:
                why = ("none of its calls is in the ranks' samples (they keep the calls whose number on "
                       f"their communicator is a multiple of up to {max(stride.values(), default=1)})")
            out.append(replace(c, split=None, split_reason=why))
            continue
        out.append(_class_split(c, matched[i], unmatched[i], finals, times, source, class_stride[i]))
    return tuple(out), clock


def _class_split(c: CallClass, calls: list[list[_Kept]], unmatched: int, finals: dict[int, RankFile],
                 times: dict[int, dict[tuple, float]], source: str, stride: int) -> CallClass:
    per: dict[tuple[int, int], _PerRank] = {}
    call_working = []
    for call in calls:
        arrivals = [k.arrival_s for k in call]
        exits = [k.exit_s for k in call]
        waiting, working = waits.split(c.collective, c.root, arrivals, exits)
        call_working.append(waits.call_working(c.collective, c.root, arrivals, exits))
        first, last = min(arrivals), max(arrivals)
        for r, k in enumerate(call):
            acc = per.setdefault((r, k.world_rank), _PerRank())
            acc.waiting += waiting[r]
            acc.working += working[r]
            acc.calls += 1
            acc.last += arrivals[r] == last
            acc.skews.append(arrivals[r] - first)
            if k.gap_s is not None:
                acc.gaps.append(k.gap_s)
    key = merged_key(c)
    time_of = {w: times[w].get(key, 0.0) for w in {w for _, w in per}}
    matched_of: dict[int, float] = {}
    for (_, w), acc in per.items():
        matched_of[w] = matched_of.get(w, 0.0) + acc.waiting + acc.working

    def scaled(w: int, waiting: float, working: float, share_calls: float) -> tuple[float, float]:
        """waiting and working over all of w's calls: its time in the class in the matched calls' proportions."""
        if matched_of[w] > 0:
            return time_of[w] * waiting / matched_of[w], time_of[w] * working / matched_of[w]
        return 0.0, time_of[w] * share_calls

    calls_of: dict[int, int] = {}
    for (_, w), acc in per.items():
        calls_of[w] = calls_of.get(w, 0) + acc.calls
    ranks = []
    for (r, w), acc in sorted(per.items()):
        wait_s, work_s = scaled(w, acc.waiting, acc.working, acc.calls / calls_of[w])
        ranks.append(RankSplit(rank=r, world_rank=w, waiting_s=wait_s, working_s=work_s,
                               last_share=acc.last / acc.calls,
                               gap_median_s=statistics.median(acc.gaps) if acc.gaps else None,
                               skew_quantiles_s=tuple(max(0.0, float(q))
                                                      for q in np.quantile(acc.skews, _quantiles()))))
    busiest = max(time_of, key=lambda w: (time_of[w], -w))
    bound = _pair_error_bound([finals[w].clock.error_s for w in time_of])
    durations = [k.exit_s - k.arrival_s for call in calls for k in call if k.world_rank == busiest]
    median_s = statistics.median(durations)
    if bound > 0 and bound >= median_s:
        return replace(c, split=None, split_reason=(
            f"the ranks' clocks agree to {bound * 1e6:.3g} us, not less than the median call's "
            f"{median_s * 1e6:.3g} us at the busiest rank: arrivals cannot be ordered within a call"))
    wait_b = sum(x.waiting_s for x in ranks if x.world_rank == busiest)
    work_b = sum(x.working_s for x in ranks if x.world_rank == busiest)
    return replace(c, split_reason="", split=ClassSplit(
        source=source, matched_calls=len(calls), unmatched_calls=unmatched, stride=1 if source == "trace" else stride,
        waiting_s=wait_b, working_s=work_b, working_call_median_s=statistics.median(call_working),
        ranks=tuple(ranks)))


def _pair_error_bound(errors: list[float]) -> float:
    """The most two ranks' arrivals can be misordered by: the sum of the two largest bounds."""
    top = sorted(errors, reverse=True)[:2]
    return sum(top)
