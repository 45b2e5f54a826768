"""The per-rank files libcollkit-preload writes under COLLKIT_PROFILE=DIR
(preload/profile_write.c), read and merged into one profile's classes and
trace (profile_file.py). Nothing here launches anything.

    rank-R.start.json  after MPI_Init: {"format": "collkit-profile-rank",
                       "version": 1 or 2, "stage": "start", "rank", "size", "host",
                       "library_version", "pid"}; version 2 adds "run_id"
    rank-R.json        at MPI_Finalize: the same with "stage": "final",
                       "span_s", "unclassified": {"calls", "time_s"},
                       "classes": [{collective, comm, comm_size, bytes,
                       datatype, dtype, op, root, in_place, calls, time_s}],
                       "trace": null | {"max_calls", "dropped",
                       "calls": [[class index, start_s, duration_s], ...]}

Version 2 (issue #41: one clock for every rank, calls matched across ranks)
adds to both files "run_id" (16 lowercase hex digits, one value for the whole
run: rank 0's, sent to every rank at MPI_Init) and to the final file

    "clock": {"mono_zero_s", "node", "method", "init_s", "offset_init_s",
              "final_s", "offset_final_s", "error_s"},
    "comms": [{"label", "instance", "rank"}, ...],
    "trace": null | {"max_calls", "dropped", "calls": [[class, start_s, duration_s, comm, seq], ...]},
    "sample": {"stride", "max_calls", "calls": [[class, start_s, duration_s, comm, seq], ...]}

clock: CLOCK_MONOTONIC at the trace's zero, the world rank leading this
rank's node, how the offset to rank 0's clock was found ("reference" on rank
0's node: 0 exactly; "same-node": the node leader's; "exchange": ping-pong
with world rank 0), the offset (local - rank 0's) at MPI_Init and at
MPI_Finalize (final_s and offset_final_s may be null: the offset is then
constant) and the bound on its error. comms: the communicators this rank
profiled calls on, in order of first use, with the number of communicators of
the same label it labelled before ("instance") and its rank there. A call row
names its communicator (an index into comms) and its sequence number there
(every profiled collective counts, so the ranks of a communicator number a
call alike). The sample keeps, trace or not, the calls whose seq is a
multiple of its stride (a power of two, doubled whenever its slots fill).
arrivals.py matches calls across ranks and splits them (waits.py).

A file that does not parse is reported as a problem (the profile is then
incomplete), never raised: the run it belongs to has happened."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from collkit.common.errors import UserError
from collkit.program import autotune_file
from collkit.program.profile_file import (CLOCK_METHODS, MAX_RANKS, CallClass, RankTrace, Trace, dtypes,
                                          is_profiled, rooted)

RANK_FORMAT = "collkit-profile-rank"
VERSIONS = (1, 2)
# The rooted collectives the registry does not describe (the preload only times them).
ROOTED_V = ("gatherv", "scatterv")
_NAME = re.compile(r"rank-(\d+)(\.start)?\.json")
_RUN_ID = re.compile(r"[0-9a-f]{16}")
_LABEL = re.compile(r"world|self|inter|c(\d+)x(\d+)")


class _Bad(Exception):
    pass


@dataclass(frozen=True)
class RankClass:
    """One class as one rank counted it."""
    collective: str
    comm: str
    comm_size: int
    bytes: int
    datatype: str
    dtype: str | None
    op: str | None
    root: int | None
    in_place: bool
    calls: int
    time_s: float

    @property
    def key(self) -> tuple:
        return _key(self)


def _key(c: RankClass | CallClass) -> tuple:
    """What makes classes of several ranks one: a rooted collective's
    non-roots cannot tell a call in which the root passed MPI_IN_PLACE
    from another, so its classes merge over the in-place flag."""
    in_place = None if c.collective in ROOTED_V or rooted(c.collective) else c.in_place
    return (c.collective, c.comm, c.comm_size, c.bytes, c.dtype, c.op, c.root, in_place)


def merged_key(c: CallClass) -> tuple:
    """The key of the ranks' classes that merge() made into c."""
    return _key(c)


class Call(NamedTuple):
    """One traced or sampled call as its rank wrote it; comm (an index into
    the rank's comms) and seq are None in a version-1 trace."""
    cls: int
    start_s: float
    duration_s: float
    comm: int | None = None
    seq: int | None = None


@dataclass(frozen=True)
class RankCalls:
    """One rank's trace as it wrote it."""
    max_calls: int
    dropped: int
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class RankSample:
    """The calls of every communicator whose seq is a multiple of stride."""
    stride: int
    max_calls: int
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class RankClock:
    """How this rank's CLOCK_MONOTONIC maps onto rank 0's (seconds)."""
    mono_zero_s: float
    node: int
    method: str
    init_s: float
    offset_init_s: float
    final_s: float | None
    offset_final_s: float | None
    error_s: float

    def offset(self, local_s: float) -> float:
        """local - rank 0's clock at local time local_s: linear between the two
        measurements (drift), constant when there is one."""
        if self.final_s is None or self.offset_final_s is None or self.final_s == self.init_s:
            return self.offset_init_s
        slope = (self.offset_final_s - self.offset_init_s) / (self.final_s - self.init_s)
        return self.offset_init_s + slope * (local_s - self.init_s)

    def to_reference(self, start_s: float) -> float:
        """A time of this rank's trace (seconds from its zero) on rank 0's clock."""
        local = self.mono_zero_s + start_s
        return local - self.offset(local)


@dataclass(frozen=True)
class RankComm:
    label: str
    instance: int
    rank: int


@dataclass
class RankFile:
    rank: int
    size: int
    host: str
    library_version: str
    final: bool
    span_s: float = 0.0
    classes: list[RankClass] = field(default_factory=list)
    unclassified_calls: int = 0
    unclassified_s: float = 0.0
    trace: RankCalls | None = None
    version: int = 1
    run_id: str | None = None
    clock: RankClock | None = None
    comms: tuple[RankComm, ...] = ()
    sample: RankSample | None = None
    autotune: autotune_file.Autotune | None = None


def _num(obj: dict, key: str, kind=float):
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int):
        raise _Bad(f"'{key}' is not {'a number' if kind is float else 'an integer'}")
    if kind is float and (not math.isfinite(v) or v < 0):
        raise _Bad(f"'{key}' is not a finite number >= 0")
    if kind is int and v < 0:
        raise _Bad(f"'{key}' is negative")
    return float(v) if kind is float else v


def _signed(obj: dict, key: str) -> float:
    """A finite number of either sign (a clock offset)."""
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Bad(f"'{key}' is not a finite number")
    return float(v)


def _class(raw: object) -> RankClass:
    if not isinstance(raw, dict):
        raise _Bad("a class is not an object")
    if not is_profiled(raw.get("collective")):
        raise _Bad(f"unknown collective {raw.get('collective')!r}")
    for key in ("comm", "datatype"):
        if not isinstance(raw.get(key), str):
            raise _Bad(f"class '{key}' is not a string")
    for key in ("dtype", "op"):
        if raw.get(key) is not None and not isinstance(raw.get(key), str):
            raise _Bad(f"class '{key}' is not a string or null")
    if raw.get("dtype") is not None and raw["dtype"] not in dtypes():
        raise _Bad(f"unknown dtype {raw['dtype']!r}")
    size = _num(raw, "comm_size", int)
    root = raw.get("root")
    if root is not None and (isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < size):
        raise _Bad("class 'root' is not a rank of its communicator")
    if not isinstance(raw.get("in_place"), bool):
        raise _Bad("class 'in_place' is not true or false")
    return RankClass(collective=raw["collective"], comm=raw["comm"], comm_size=size, bytes=_num(raw, "bytes", int),
                     datatype=raw["datatype"], dtype=raw.get("dtype"), op=raw.get("op"), root=root,
                     in_place=raw["in_place"], calls=_num(raw, "calls", int), time_s=_num(raw, "time_s"))


def _clock(raw: object, rank: int, size: int) -> RankClock:
    if not isinstance(raw, dict):
        raise _Bad("'clock' is not an object")
    node = _num(raw, "node", int)
    if not node <= rank:
        raise _Bad(f"clock 'node' {node} is not a world rank at or below {rank} (its node's lowest)")
    method = raw.get("method")
    if method not in CLOCK_METHODS:
        raise _Bad(f"clock 'method' {method!r} is not one of {', '.join(CLOCK_METHODS)}")
    # rank 0's node is the reference; any other rank may measure (exchange: another node's leader, or
    # every rank under COLLKIT_PROFILE_CLOCK=exchange); a rank that shares its leader's numbers follows it
    if not {"reference": node == 0, "exchange": rank != 0, "same-node": node < rank}[method]:
        raise _Bad(f"clock 'method' {method!r} at rank {rank} of node {node}")
    final_s = None if raw.get("final_s") is None else _num(raw, "final_s")
    offset_final = None if raw.get("offset_final_s") is None else _signed(raw, "offset_final_s")
    if (final_s is None) != (offset_final is None):
        raise _Bad("clock 'final_s' and 'offset_final_s' are not both numbers or both null")
    c = RankClock(mono_zero_s=_num(raw, "mono_zero_s"), node=node, method=method, init_s=_num(raw, "init_s"),
                  offset_init_s=_signed(raw, "offset_init_s"), final_s=final_s, offset_final_s=offset_final,
                  error_s=_num(raw, "error_s"))
    if final_s is not None and final_s < c.init_s:
        raise _Bad("clock 'final_s' is before 'init_s'")
    if method == "reference" and (c.offset_init_s != 0 or (offset_final or 0) != 0 or c.error_s != 0):
        raise _Bad("clock of rank 0's node has an offset or an error (it is the reference: 0 exactly)")
    return c


def _comms(raw: object, size: int) -> tuple[RankComm, ...]:
    if not isinstance(raw, list):
        raise _Bad("'comms' is not a list")
    out, seen = [], set()
    for c in raw:
        if not isinstance(c, dict) or not isinstance(c.get("label"), str):
            raise _Bad("a communicator is not an object with a 'label'")
        m = _LABEL.fullmatch(c["label"])
        if not m:
            raise _Bad(f"communicator label {c['label']!r} is not world, self, inter or c<L>x<N>")
        comm = RankComm(label=c["label"], instance=_num(c, "instance", int), rank=_num(c, "rank", int))
        # the communicator's size where its label says it (an intercommunicator's does not)
        bound = {"world": size, "self": 1}.get(comm.label, int(m.group(2)) if m.group(2) else MAX_RANKS)
        if comm.rank >= bound:
            raise _Bad(f"rank {comm.rank} in communicator {comm.label} of {bound} ranks")
        if (comm.label, comm.instance) in seen:
            raise _Bad(f"communicator {comm.label} instance {comm.instance} listed twice")
        seen.add((comm.label, comm.instance))
        out.append(comm)
    return tuple(out)


def _rows(raw: object, what: str, classes: list[RankClass], comms: tuple[RankComm, ...] | None) -> tuple[Call, ...]:
    """Call rows: [class, start_s, duration_s] in version 1 (comms None), with
    [..., comm, seq] in version 2; each index in bounds, the class on the
    communicator the row names."""
    if not isinstance(raw, list):
        raise _Bad(f"'{what}' has no list of calls")
    width = 3 if comms is None else 5
    shape = "[class index, start_s, duration_s" + ("]" if comms is None else ", comm index, seq]")
    out = []
    for c in raw:
        if (not isinstance(c, list) or len(c) != width
                or any(isinstance(x, bool) for x in c) or not isinstance(c[0], int)
                or not 0 <= c[0] < len(classes)
                or not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in c[1:3])
                or (comms is not None and not (isinstance(c[3], int) and 0 <= c[3] < len(comms)
                                               and isinstance(c[4], int) and c[4] >= 0))):
            raise _Bad(f"a {what} call is not {shape}")
        if comms is not None and classes[c[0]].comm != comms[c[3]].label:
            raise _Bad(f"a {what} call of a class on {classes[c[0]].comm} names communicator {comms[c[3]].label}")
        out.append(Call(c[0], float(c[1]), float(c[2]), *(c[3:] if comms is not None else ())))
    return tuple(out)


def _sample(raw: object, classes: list[RankClass], comms: tuple[RankComm, ...]) -> RankSample:
    if not isinstance(raw, dict):
        raise _Bad("'sample' is not an object")
    stride, cap = _num(raw, "stride", int), _num(raw, "max_calls", int)
    if stride < 1 or stride & (stride - 1):
        raise _Bad(f"sample 'stride' {stride} is not a power of two")
    calls = _rows(raw.get("calls"), "sample", classes, comms)
    if len(calls) > cap:
        raise _Bad(f"the sample holds {len(calls)} calls, more than its max_calls {cap}")
    if any(c.seq % stride for c in calls):
        raise _Bad(f"a sampled call's seq is not a multiple of the stride {stride}")
    return RankSample(stride=stride, max_calls=cap, calls=calls)


def read(path: Path) -> RankFile:
    """One rank file; _Bad (with the reason) when it is not one."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as e:
        raise _Bad(f"unreadable ({e})") from None
    if not isinstance(raw, dict) or raw.get("format") != RANK_FORMAT or raw.get("version") not in VERSIONS:
        raise _Bad("not a collkit-profile-rank file of version 1 or 2")
    version = raw["version"]
    stage = raw.get("stage")
    if stage not in ("start", "final"):
        raise _Bad(f"unknown stage {stage!r}")
    size = _num(raw, "size", int)
    rank = _num(raw, "rank", int)
    if not 0 <= rank < size <= MAX_RANKS:
        raise _Bad(f"rank {rank} of {size}")
    for key in ("host", "library_version"):
        if not isinstance(raw.get(key), str):
            raise _Bad(f"'{key}' is not a string")
    rf = RankFile(rank=rank, size=size, host=raw["host"], library_version=raw["library_version"],
                  final=stage == "final", version=version)
    if version >= 2:
        if not isinstance(raw.get("run_id"), str) or not _RUN_ID.fullmatch(raw["run_id"]):
            raise _Bad("'run_id' is not 16 lowercase hexadecimal digits")
        rf.run_id = raw["run_id"]
    if not rf.final:
        return rf
    rf.span_s = _num(raw, "span_s")
    un = raw.get("unclassified")
    if not isinstance(un, dict):
        raise _Bad("'unclassified' is not an object")
    rf.unclassified_calls, rf.unclassified_s = _num(un, "calls", int), _num(un, "time_s")
    classes = raw.get("classes")
    if not isinstance(classes, list):
        raise _Bad("'classes' is not a list")
    rf.classes = [_class(c) for c in classes]
    if version >= 2:
        rf.clock = _clock(raw.get("clock"), rank, size)
        rf.comms = _comms(raw.get("comms"), size)
        rf.sample = _sample(raw.get("sample"), rf.classes, rf.comms)
    if raw.get("autotune") is not None:       # the preload ran its autotuner (issue #42)
        try:
            rf.autotune = autotune_file.parse(raw["autotune"])
        except autotune_file.BadAutotune as e:
            raise _Bad(str(e)) from None
    tr = raw.get("trace")
    if tr is not None:
        if not isinstance(tr, dict):
            raise _Bad("'trace' is not an object or null")
        rf.trace = RankCalls(max_calls=_num(tr, "max_calls", int), dropped=_num(tr, "dropped", int),
                             calls=_rows(tr.get("calls"), "traced", rf.classes, rf.comms if version >= 2 else None))
    return rf


@dataclass
class Found:
    """What a profile directory holds: per rank its latest file, and problems."""

    starts: dict[int, RankFile] = field(default_factory=dict)
    finals: dict[int, RankFile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # every run_id a file named (version 2); more than one: files of two runs
    run_ids: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        sizes = {f.size for f in [*self.starts.values(), *self.finals.values()]}
        return max(sizes) if sizes else 0

    @property
    def any(self) -> bool:
        return bool(self.starts or self.finals)


def collect(folder: Path) -> Found:
    found = Found()
    for path in sorted(folder.iterdir()):
        m = _NAME.fullmatch(path.name)
        if not m:
            continue
        try:
            rf = read(path)
        except _Bad as e:
            found.problems.append(f"{path.name}: {e}")
            continue
        if rf.rank != int(m.group(1)) or rf.final == bool(m.group(2)):
            found.problems.append(f"{path.name}: holds rank {rf.rank}'s {'final' if rf.final else 'start'} file")
            continue
        if rf.run_id is not None:
            found.run_ids.add(rf.run_id)
        (found.finals if rf.final else found.starts)[rf.rank] = rf
    if len({f.size for f in [*found.starts.values(), *found.finals.values()]}) > 1:
        found.problems.append("the rank files disagree on the number of ranks")
    if len({f.version for f in [*found.starts.values(), *found.finals.values()]}) > 1:
        found.problems.append("the rank files are of different versions (preloads of two collkits)")
    if len(found.run_ids) > 1:
        found.problems.append(f"the rank files are of {len(found.run_ids)} runs ({', '.join(sorted(found.run_ids))})")
    return found


def require_one_run(found: Found, folder: Path) -> None:
    """Files of two runs in one folder would be merged into one program that
    never ran: refused (UserError), naming the folder, the runs and the fix."""
    if len(found.run_ids) > 1:
        ids = sorted(found.run_ids)
        raise UserError(f"{folder}: rank files of {len(ids)} runs ({', '.join(ids)}) in one folder, which would "
                        "merge into a program that never ran; profile one launch at a time, into an empty folder")


def merge(finals: dict[int, RankFile], trace_cap: int) -> tuple[tuple[CallClass, ...], Trace | None]:
    """Classes over the ranks (calls and time: the most on one rank, and the
    time's sum), sorted by time_max_s, and each rank's trace pointing into them."""
    per_rank: dict[tuple, dict[int, list]] = {}
    for rank in sorted(finals):
        for c in finals[rank].classes:
            slot = per_rank.setdefault(c.key, {}).setdefault(rank, [0, 0.0, c.datatype, False])
            slot[0] += c.calls
            slot[1] += c.time_s
            slot[3] = slot[3] or c.in_place
    merged: list[tuple[tuple, CallClass]] = []
    for key, ranks in per_rank.items():
        coll, comm, size, nbytes, dtype, op, root, in_place = key
        vals = [ranks[r] for r in sorted(ranks)]
        times = [v[1] for v in vals]
        merged.append((key, CallClass(
            collective=coll, comm=comm, comm_size=size, bytes=nbytes, datatype=vals[0][2], dtype=dtype, op=op,
            root=root, in_place=bool(in_place) if in_place is not None else any(v[3] for v in vals),
            calls=max(v[0] for v in vals), time_max_s=max(times), time_sum_s=math.fsum(times), ranks=len(vals))))
    merged.sort(key=lambda kc: -kc[1].time_max_s)
    index = {key: i for i, (key, _) in enumerate(merged)}
    classes = tuple(c for _, c in merged)
    if not trace_cap:
        return classes, None
    ranks_out = []
    for rank in sorted(finals):
        rf = finals[rank]
        if rf.trace is None:
            continue
        to_merged = [index[c.key] for c in rf.classes]
        calls = tuple((to_merged[c.cls], c.start_s, c.duration_s) for c in rf.trace.calls[:trace_cap])
        ranks_out.append(RankTrace(rank=rank, dropped=rf.trace.dropped, calls=calls))
    return classes, Trace(max_calls_per_rank=trace_cap, ranks=tuple(ranks_out))
