"""The profile file: what `collkit profile` writes and `spec --from-profile`,
`predict`, `trial` and `replay` read. One home for its shape and its checks.

    {"format": "collkit-profile", "version": 1,
     "complete": true, "exit_status": 0, "incomplete_reason": "",
     "created": "2026-11-27T08:00:00Z", "collkit_version": "...",
     "program": {"command": ["mpirun", "-n", "4", "./app"], "cwd": "/home/u/run"},
     "mpi": {"name": "openmpi", "family": "openmpi", "library_version": "Open MPI v4.1.4 ..."},
     "ranks": 4, "ranks_reported": 4, "nodes": 1, "hosts": ["n001"],
     "wall_s": 3.2,              # the launcher's wall time, as collkit saw it
     "mpi_span_s": 3.0,          # longest MPI_Init..MPI_Finalize span over the ranks
     "classes": [ {class}, ... ],    # sorted by time_max_s, largest first
     "trace": null | {"max_calls_per_rank": 100000,
                      "ranks": [{"rank": 0, "dropped": 0,
                                 "calls": [[class_index, start_s, duration_s], ...]}]},
     "unclassified": {"calls": 0, "time_max_s": 0.0},   # optional, zeros when absent
     "collectives_busiest_rank_s": 0.09}   # optional: the most time one rank spent in collectives

A class is one kind of call: collective, communicator, block bytes as the
preload's rules count them (ck_mpi_roles: bytes of one rank's block),
datatype, op, root, in place:

    {"collective": "allreduce", "comm": "world", "comm_size": 4, "bytes": 8,
     "datatype": "MPI_DOUBLE", "dtype": "double", "op": "sum", "root": null,
     "in_place": false, "calls": 1000, "time_max_s": 0.01, "time_sum_s": 0.035,
     "ranks": 4}

* comm: "world" (congruent with MPI_COMM_WORLD), "self" (one rank), "inter"
  (an intercommunicator), else "c<L>x<N>": the communicator whose rank 0 is
  world rank L and whose size is N (communicators alike in both are merged).
* datatype: MPI's name of the datatype on the block's side at the lowest rank
  that reported the class ("derived" for a type without a name); dtype: the
  spec's name of a reduction's datatype (int8 int32 int64 float double) or
  null (data movement, or a type collkit-bench cannot fill).
* op: sum max min prod, another predefined op's MPI name in lower case without
  "mpi_" (band, land, maxloc, ...), "user", or null (no op).
* root: the root of a rooted collective, else null. in_place: any rank passed
  MPI_IN_PLACE.
* calls: the most calls any rank made in the class; time_max_s: the most time
  any rank spent inside them (its sum over its calls); time_sum_s: the sum over
  ranks; ranks: how many ranks reported the class.
* trace start_s: seconds from the end of that rank's MPI_Init to the call's
  start; duration_s: its time inside the library.
* unclassified: calls the preload timed but could not put in a class (its
  table of classes full, or erroneous arguments): the most such calls and
  time on any rank. They are in no class and no trace.

A file that is not JSON, not this format, a newer version, or inconsistent is
refused with one line (UserError) naming the file; an incomplete profile loads
(its `complete` false) and each reader decides whether it may use it."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.library.registry import COLLECTIVES

FORMAT = "collkit-profile"
VERSION = 1
# Collectives the preload only times (no algorithm of collkit's covers them).
TIMING_ONLY = ("barrier", "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_v", "scan",
               "exscan")
MAX_RANKS = 1 << 24

# What a collective is (rooted, a reduction) and which datatypes a reduction's
# class names are the registry's (libcollkit's descriptors), read on use:
# importing this module needs no build.


def is_profiled(collective: object) -> bool:
    """A collective a profile may name: the eight libcollkit implements and the timing-only ones."""
    return collective in TIMING_ONLY or collective in COLLECTIVES


def rooted(collective: str) -> bool:
    """One of the eight with a root (bcast, reduce, gather, scatter)."""
    return collective in COLLECTIVES and registry.collective(collective).has_root


def reduction(collective: str) -> bool:
    """One of the eight with an op (reduce, allreduce, reduce_scatter)."""
    return collective in COLLECTIVES and registry.collective(collective).has_op


def dtypes() -> tuple[str, ...]:
    """The names a reduction class's dtype may have (int8 int32 int64 float double)."""
    return registry.datatype_names()


@dataclass(frozen=True)
class CallClass:
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
    time_max_s: float
    time_sum_s: float
    ranks: int

    @property
    def key(self) -> tuple:
        """What makes two classes one (the merge key): everything but the counts
        and the informational datatype name."""
        return (self.collective, self.comm, self.comm_size, self.bytes, self.dtype, self.op,
                self.root, self.in_place)

    def share(self, total_s: float) -> float:
        """This class's part of total_s (the program's time), 0 when unknown."""
        return self.time_max_s / total_s if total_s > 0 else 0.0


@dataclass(frozen=True)
class RankTrace:
    rank: int
    dropped: int
    calls: tuple[tuple[int, float, float], ...]  # (class index, start_s, duration_s)


@dataclass(frozen=True)
class Trace:
    max_calls_per_rank: int
    ranks: tuple[RankTrace, ...]


@dataclass(frozen=True)
class Profile:
    complete: bool
    exit_status: int
    incomplete_reason: str
    created: str
    collkit_version: str
    command: tuple[str, ...]
    cwd: str
    mpi_name: str
    mpi_family: str
    mpi_library_version: str
    ranks: int
    ranks_reported: int
    nodes: int
    hosts: tuple[str, ...]
    wall_s: float
    mpi_span_s: float
    classes: tuple[CallClass, ...]
    trace: Trace | None = None
    unclassified_calls: int = 0
    unclassified_time_max_s: float = 0.0
    # The most time one rank spent in collectives (its classes and its
    # unclassified calls); 0 in a file that does not say.
    busiest_rank_s: float = 0.0
    path: Path | None = field(default=None, compare=False)

    @property
    def class_time_sum_s(self) -> float:
        """The sum of the classes' busiest-rank times: what per-class
        predictions add up to, and the whole that a class's share is part of.
        It can exceed the program's time when different ranks are the busiest
        in different classes (ranks that wait for each other)."""
        return sum(c.time_max_s for c in self.classes)

    @property
    def collective_time_s(self) -> float:
        """The program's time in collectives: the busiest rank's (the sum of
        the classes' maxima for a file that does not record it)."""
        return self.busiest_rank_s if self.busiest_rank_s > 0 else self.class_time_sum_s

    def to_json(self) -> dict:
        # classes are written largest first; the trace's class indices follow them
        order = sorted(range(len(self.classes)), key=lambda i: -self.classes[i].time_max_s)
        new_index = {old: new for new, old in enumerate(order)}
        out = {
            "format": FORMAT, "version": VERSION,
            "complete": self.complete, "exit_status": self.exit_status,
            "incomplete_reason": self.incomplete_reason,
            "created": self.created, "collkit_version": self.collkit_version,
            "program": {"command": list(self.command), "cwd": self.cwd},
            "mpi": {"name": self.mpi_name, "family": self.mpi_family,
                    "library_version": self.mpi_library_version},
            "ranks": self.ranks, "ranks_reported": self.ranks_reported, "nodes": self.nodes,
            "hosts": list(self.hosts), "wall_s": self.wall_s, "mpi_span_s": self.mpi_span_s,
            "classes": [asdict(self.classes[i]) for i in order],
            "trace": None,
            "unclassified": {"calls": self.unclassified_calls, "time_max_s": self.unclassified_time_max_s},
            "collectives_busiest_rank_s": self.busiest_rank_s,
        }
        if self.trace is not None:
            out["trace"] = {"max_calls_per_rank": self.trace.max_calls_per_rank,
                            "ranks": [{"rank": r.rank, "dropped": r.dropped,
                                       "calls": [[new_index[c[0]], c[1], c[2]] for c in r.calls]}
                                      for r in self.trace.ranks]}
        return out


def dump(profile: Profile, path: Path) -> None:
    """Write atomically: a reader never sees half a profile."""
    atomic.write_text(Path(path), json.dumps(profile.to_json(), separators=(",", ":")) + "\n")


class _Bad(Exception):
    pass


def _get(obj: dict, key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise _Bad(f"{where}: '{key}' missing")
    value = obj[key]
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _Bad(f"{where}: '{key}' is not a finite number")
        if value < 0:
            raise _Bad(f"{where}: '{key}' is negative")
        return float(value)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(f"{where}: '{key}' is not an integer")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise _Bad(f"{where}: '{key}' is not true or false")
        return value
    if kind is str:
        if not isinstance(value, str):
            raise _Bad(f"{where}: '{key}' is not a string")
        return value
    raise AssertionError(kind)


def _count(obj: dict, key: str, where: str, lo: int = 0, hi: int = 1 << 62) -> int:
    value = _get(obj, key, int, where)
    if not lo <= value <= hi:
        raise _Bad(f"{where}: '{key}' {value} is outside {lo}..{hi}")
    return value


def _optional(obj: dict, key: str, kind, where: str):
    if obj.get(key) is None:
        if key not in obj:
            raise _Bad(f"{where}: '{key}' missing")
        return None
    return _get(obj, key, kind, where)


def _call_class(raw: dict, where: str) -> CallClass:
    coll = _get(raw, "collective", str, where)
    if not is_profiled(coll):
        raise _Bad(f"{where}: unknown collective '{coll}'")
    comm_size = _count(raw, "comm_size", where, 1, MAX_RANKS)
    dtype = _optional(raw, "dtype", str, where)
    if dtype is not None and dtype not in dtypes():
        raise _Bad(f"{where}: dtype '{dtype}' is not one of {', '.join(dtypes())}")
    root = _optional(raw, "root", int, where)
    if root is not None and not 0 <= root < comm_size:
        raise _Bad(f"{where}: root {root} is not a rank of a {comm_size}-rank communicator")
    c = CallClass(
        collective=coll, comm=_get(raw, "comm", str, where), comm_size=comm_size,
        bytes=_count(raw, "bytes", where), datatype=_get(raw, "datatype", str, where), dtype=dtype,
        op=_optional(raw, "op", str, where), root=root, in_place=_get(raw, "in_place", bool, where),
        calls=_count(raw, "calls", where), time_max_s=_get(raw, "time_max_s", float, where),
        time_sum_s=_get(raw, "time_sum_s", float, where), ranks=_count(raw, "ranks", where, 1, MAX_RANKS))
    if c.time_sum_s < c.time_max_s * (1 - 1e-9):
        raise _Bad(f"{where}: time_sum_s is below time_max_s")
    return c


def _trace(raw, nclasses: int) -> Trace | None:
    if raw is None:
        return None
    where = "trace"
    cap = _count(raw, "max_calls_per_rank", where, 1, 1 << 40)
    ranks = raw.get("ranks")
    if not isinstance(ranks, list):
        raise _Bad("trace: 'ranks' is not a list")
    out = []
    for i, r in enumerate(ranks):
        w = f"trace rank entry {i}"
        calls = r.get("calls") if isinstance(r, dict) else None
        if not isinstance(calls, list) or len(calls) > cap:
            raise _Bad(f"{w}: 'calls' is not a list of at most {cap} calls")
        parsed = []
        for j, c in enumerate(calls):
            if (not isinstance(c, list) or len(c) != 3 or isinstance(c[0], bool) or not isinstance(c[0], int)
                    or not 0 <= c[0] < nclasses
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                               and math.isfinite(x) and x >= 0 for x in c[1:])):
                raise _Bad(f"{w}: call {j} is not [class index, start_s, duration_s]")
            parsed.append((c[0], float(c[1]), float(c[2])))
        out.append(RankTrace(rank=_count(r, "rank", w, 0, MAX_RANKS), dropped=_count(r, "dropped", w),
                             calls=tuple(parsed)))
    return Trace(max_calls_per_rank=cap, ranks=tuple(out))


def from_json(raw: object, path: Path | None = None) -> Profile:
    """The profile in a parsed JSON object; _Bad on anything wrong."""
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise _Bad(f"not a collkit profile (no \"format\": \"{FORMAT}\")")
    version = raw.get("version")
    if version != VERSION:
        raise _Bad(f"profile format version {version!r}; this collkit reads version {VERSION}")
    program = raw.get("program")
    mpi = raw.get("mpi")
    if not isinstance(program, dict) or not isinstance(mpi, dict):
        raise _Bad("'program' or 'mpi' is not an object")
    command = program.get("command")
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise _Bad("program: 'command' is not a list of strings")
    hosts = raw.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise _Bad("'hosts' is not a list of strings")
    classes_raw = raw.get("classes")
    if not isinstance(classes_raw, list):
        raise _Bad("'classes' is not a list")
    classes = tuple(_call_class(c, f"class {i}") for i, c in enumerate(classes_raw))
    keys = [c.key for c in classes]
    if len(set(keys)) != len(keys):
        raise _Bad("two classes have the same key")
    ranks = _count(raw, "ranks", "profile", 1, MAX_RANKS)
    unclassified = raw.get("unclassified", {"calls": 0, "time_max_s": 0.0})
    return Profile(
        complete=_get(raw, "complete", bool, "profile"), exit_status=_get(raw, "exit_status", int, "profile"),
        incomplete_reason=_get(raw, "incomplete_reason", str, "profile"),
        created=_get(raw, "created", str, "profile"), collkit_version=_get(raw, "collkit_version", str, "profile"),
        command=tuple(command), cwd=_get(program, "cwd", str, "program"),
        mpi_name=_get(mpi, "name", str, "mpi"), mpi_family=_get(mpi, "family", str, "mpi"),
        mpi_library_version=_get(mpi, "library_version", str, "mpi"),
        ranks=ranks, ranks_reported=_count(raw, "ranks_reported", "profile", 0, ranks),
        nodes=_count(raw, "nodes", "profile", 0, MAX_RANKS), hosts=tuple(hosts),
        wall_s=_get(raw, "wall_s", float, "profile"), mpi_span_s=_get(raw, "mpi_span_s", float, "profile"),
        classes=classes, trace=_trace(raw.get("trace"), len(classes)),
        unclassified_calls=_count(unclassified, "calls", "unclassified"),
        unclassified_time_max_s=_get(unclassified, "time_max_s", float, "unclassified"),
        busiest_rank_s=_get(raw, "collectives_busiest_rank_s", float, "profile")
        if "collectives_busiest_rank_s" in raw else 0.0, path=path)


def load(path: str | Path, *, need_complete: bool = False, need_trace: bool = False) -> Profile:
    """Read and check a profile; one-line UserError naming the file otherwise."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UserError(f"{path}: cannot read the profile ({e.strerror}); give a file written by "
                        "`collkit profile --out FILE`") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise UserError(f"{path}: not a collkit profile (not JSON: {e}); give a file written by "
                        "`collkit profile --out FILE`") from None
    try:
        prof = from_json(raw, p)
    except _Bad as e:
        raise UserError(f"{path}: damaged or foreign profile ({e}); profile the program again with "
                        "`collkit profile`") from None
    if need_complete and not prof.complete:
        raise UserError(f"{path}: the profile is incomplete ({prof.incomplete_reason or 'the program failed'}, "
                        f"exit status {prof.exit_status}); profile a run that finishes")
    if need_trace and prof.trace is None:
        raise UserError(f"{path}: the profile has no call sequence; profile again with "
                        "`collkit profile --trace`")
    return prof
