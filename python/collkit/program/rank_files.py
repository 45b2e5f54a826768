"""The per-rank files libcollkit-preload writes under COLLKIT_PROFILE=DIR
(preload/profile_write.c), read and merged into one profile's classes and
trace (profile_file.py). Nothing here launches anything.

    rank-R.start.json  after MPI_Init: {"format": "collkit-profile-rank",
                       "version": 1, "stage": "start", "rank", "size", "host",
                       "library_version", "pid"}
    rank-R.json        at MPI_Finalize: the same with "stage": "final",
                       "span_s", "unclassified": {"calls", "time_s"},
                       "classes": [{collective, comm, comm_size, bytes,
                       datatype, dtype, op, root, in_place, calls, time_s}],
                       "trace": null | {"max_calls", "dropped",
                       "calls": [[class index, start_s, duration_s], ...]}

A file that does not parse is reported as a problem (the profile is then
incomplete), never raised: the run it belongs to has happened."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from collkit.program.profile_file import MAX_RANKS, CallClass, RankTrace, Trace, dtypes, is_profiled, rooted

RANK_FORMAT = "collkit-profile-rank"
# The rooted collectives the registry does not describe (the preload only times them).
ROOTED_V = ("gatherv", "scatterv")
_NAME = re.compile(r"rank-(\d+)(\.start)?\.json")


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
        """What makes classes of several ranks one: a rooted collective's
        non-roots cannot tell a call in which the root passed MPI_IN_PLACE
        from another, so its classes merge over the in-place flag."""
        in_place = None if self.collective in ROOTED_V or rooted(self.collective) else self.in_place
        return (self.collective, self.comm, self.comm_size, self.bytes, self.dtype, self.op, self.root, in_place)


@dataclass(frozen=True)
class RankCalls:
    """One rank's trace as it wrote it: (class index into its own classes, start_s, duration_s)."""
    max_calls: int
    dropped: int
    calls: tuple[tuple[int, float, float], ...]


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


def _num(obj: dict, key: str, kind=float):
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int):
        raise _Bad(f"'{key}' is not {'a number' if kind is float else 'an integer'}")
    if kind is float and (not math.isfinite(v) or v < 0):
        raise _Bad(f"'{key}' is not a finite number >= 0")
    if kind is int and v < 0:
        raise _Bad(f"'{key}' is negative")
    return float(v) if kind is float else v


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


def read(path: Path) -> RankFile:
    """One rank file; _Bad (with the reason) when it is not one."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as e:
        raise _Bad(f"unreadable ({e})") from None
    if not isinstance(raw, dict) or raw.get("format") != RANK_FORMAT or raw.get("version") != 1:
        raise _Bad("not a collkit-profile-rank file of version 1")
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
                  final=stage == "final")
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
    tr = raw.get("trace")
    if tr is not None:
        calls = tr.get("calls") if isinstance(tr, dict) else None
        if not isinstance(calls, list):
            raise _Bad("'trace' has no list of calls")
        for c in calls:
            if (not isinstance(c, list) or len(c) != 3 or not isinstance(c[0], int)
                    or not 0 <= c[0] < len(classes)
                    or not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in c[1:])):
                raise _Bad("a traced call is not [class index, start_s, duration_s]")
        rf.trace = RankCalls(max_calls=_num(tr, "max_calls", int), dropped=_num(tr, "dropped", int),
                             calls=tuple((i, float(start), float(d)) for i, start, d in calls))
    return rf


@dataclass
class Found:
    """What a profile directory holds: per rank its latest file, and problems."""

    starts: dict[int, RankFile] = field(default_factory=dict)
    finals: dict[int, RankFile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

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
        (found.finals if rf.final else found.starts)[rf.rank] = rf
    if len({f.size for f in [*found.starts.values(), *found.finals.values()]}) > 1:
        found.problems.append("the rank files disagree on the number of ranks")
    return found


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
        calls = tuple((to_merged[i], start, d) for i, start, d in rf.trace.calls[:trace_cap])
        ranks_out.append(RankTrace(rank=rank, dropped=rf.trace.dropped, calls=calls))
    return classes, Trace(max_calls_per_rank=trace_cap, ranks=tuple(ranks_out))
