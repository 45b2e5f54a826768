"""The profile file: what `collkit profile` writes and `spec --from-profile`,
`predict`, `trial` and `replay` read. One home for its shape and its checks.

    {"format": "collkit-profile", "version": 2,
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
     "collectives_busiest_rank_s": 0.09,   # optional: the most time one rank spent in collectives
     "run_id": "5f0c3a9e12b4d7a0",        # null: version-1 rank files (no run id)
     "clock": null | {"methods": ["exchange", "reference", "same-node"],  # how ranks' clocks were mapped
                      "error_bound_s": 1.2e-06,   # the largest rank's bound on its offset's error
                      "nodes": 2}}                # clock domains (nodes) among the ranks

A class is one kind of call: collective, communicator, block bytes as the
preload's rules count them (ck_mpi_roles: bytes of one rank's block),
datatype, op, root, in place:

    {"collective": "allreduce", "comm": "world", "comm_size": 4, "bytes": 8,
     "datatype": "MPI_DOUBLE", "dtype": "double", "op": "sum", "root": null,
     "in_place": false, "calls": 1000, "time_max_s": 0.01, "time_sum_s": 0.035,
     "ranks": 4, "split": null | {split}, "split_reason": ""}

The split (issue #41; arrivals.py computes it, waits.py defines it) of the
class's time into waiting (for the ranks a rank's result depends on) and
working (the rest):

    {"source": "trace" | "sample", "matched_calls": 500, "unmatched_calls": 0,
     "stride": 4,                  # the sample's: every 4th call of the communicator
     "waiting_s": 0.006, "working_s": 0.004,     # at the busiest rank, all its calls
     "working_call_median_s": 8e-06,             # median over matched calls of waits.call_working
     "ranks": [{"rank": 0, "world_rank": 0,      # rank in the class's communicator, in the world
                "waiting_s": 0.006, "working_s": 0.004,  # this rank's, all its calls
                "last_share": 0.0,               # fraction of matched calls it arrived last at
                "gap_median_s": 1e-04 | null,    # median from its previous profiled call's exit
                "skew_quantiles_s": [0, ..., 3e-04]}]}   # arrival - the call's first arrival,
                                                         # 0 %, 10 %, ..., 100 % quantiles

split is null where no call of the class could be matched over its ranks or
the clocks are too uncertain; split_reason says why ("" otherwise). Version 1
(no run_id, clock, split) loads with split null everywhere.

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

import functools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.library import registry
from collkit.library.registry import COLLECTIVES
from collkit.program import autotune_file

FORMAT = "collkit-profile"
VERSION = 2
VERSIONS = (1, 2)   # the versions this collkit reads
# Collectives the preload only times (no algorithm of collkit's covers them).
TIMING_ONLY = ("barrier", "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_v", "scan",
               "exscan")
MAX_RANKS = 1 << 24
# How a rank's clock was mapped onto rank 0's (the rank files' clock "method").
CLOCK_METHODS = ("reference", "same-node", "exchange")
SPLIT_SOURCES = ("trace", "sample")

# What a collective is (rooted, a reduction) and which datatypes a reduction's
# class names are the registry's (libcollkit's descriptors), read on use:
# importing this module needs no build.


def is_profiled(collective: object) -> bool:
    """A collective a profile may name: the eight libcollkit implements and the timing-only ones."""
    return collective in TIMING_ONLY or collective in COLLECTIVES


# Cached: a class's merge key asks once per class and rank file (thousands of
# classes), and the registry's name lookup builds its list each time.
@functools.lru_cache(maxsize=None)
def rooted(collective: str) -> bool:
    """One of the eight with a root (bcast, reduce, gather, scatter)."""
    return collective in COLLECTIVES and registry.collective(collective).has_root


@functools.lru_cache(maxsize=None)
def reduction(collective: str) -> bool:
    """One of the eight with an op (reduce, allreduce, reduce_scatter)."""
    return collective in COLLECTIVES and registry.collective(collective).has_op


def dtypes() -> tuple[str, ...]:
    """The names a reduction class's dtype may have (int8 int32 int64 float double)."""
    return registry.datatype_names()


@dataclass(frozen=True)
class RankSplit:
    """One rank's part of a class's split."""
    rank: int                   # in the class's communicator
    world_rank: int
    waiting_s: float            # over all its calls in the class
    working_s: float
    last_share: float           # fraction of the matched calls at which it arrived last
    gap_median_s: float | None  # median time from its previous profiled call's exit to an arrival
    skew_quantiles_s: tuple[float, ...]   # its arrival - the call's first arrival: 0, 10, ..., 100 %


@dataclass(frozen=True)
class ClassSplit:
    """A class's time split into waiting and working (waits.py's definition)."""
    source: str                 # "trace" or "sample"
    matched_calls: int
    unmatched_calls: int
    stride: int
    waiting_s: float            # at the class's busiest rank, over all its calls
    working_s: float
    working_call_median_s: float
    ranks: tuple[RankSplit, ...]


@dataclass(frozen=True)
class Clock:
    """How the ranks' times were put on one clock."""
    methods: tuple[str, ...]
    error_bound_s: float
    nodes: int


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
    split: ClassSplit | None = None
    split_reason: str = ""      # why split is None

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
    run_id: str | None = None
    clock: Clock | None = None
    autotune: autotune_file.Autotune | None = None     # the preload's autotuner ran (issue #42)
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
            "classes": [asdict(self.classes[i]) for i in order],   # the split's tuples: JSON lists
            "trace": None,
            "unclassified": {"calls": self.unclassified_calls, "time_max_s": self.unclassified_time_max_s},
            "collectives_busiest_rank_s": self.busiest_rank_s,
            "run_id": self.run_id,
            "clock": None if self.clock is None else {"methods": list(self.clock.methods),
                                                      "error_bound_s": self.clock.error_bound_s,
                                                      "nodes": self.clock.nodes},
        }
        if self.autotune is not None:
            out["autotune"] = self.autotune.to_json()
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


def _fraction(obj: dict, key: str, where: str) -> float:
    value = _get(obj, key, float, where)
    if value > 1:
        raise _Bad(f"{where}: '{key}' {value} is above 1")
    return value


def _float_list(obj: dict, key: str, where: str, n: int) -> tuple[float, ...]:
    values = obj.get(key)
    if not isinstance(values, list) or len(values) != n:
        raise _Bad(f"{where}: '{key}' is not a list of {n} numbers")
    out = tuple(_get({key: v}, key, float, where) for v in values)
    if any(b < a for a, b in zip(out, out[1:])):
        raise _Bad(f"{where}: '{key}' is not in increasing order")
    return out


def _rank_split(raw: object, where: str, comm_size: int, ranks: int) -> RankSplit:
    if not isinstance(raw, dict):
        raise _Bad(f"{where}: not an object")
    return RankSplit(
        rank=_count(raw, "rank", where, 0, comm_size - 1), world_rank=_count(raw, "world_rank", where, 0, ranks - 1),
        waiting_s=_get(raw, "waiting_s", float, where), working_s=_get(raw, "working_s", float, where),
        last_share=_fraction(raw, "last_share", where), gap_median_s=_optional(raw, "gap_median_s", float, where),
        skew_quantiles_s=_float_list(raw, "skew_quantiles_s", where, registry.skew_quantiles()))


def _split(raw: object, where: str, comm_size: int, ranks: int) -> ClassSplit | None:
    if raw is None:
        return None
    where = f"{where} split"
    if not isinstance(raw, dict):
        raise _Bad(f"{where}: not an object or null")
    source = _get(raw, "source", str, where)
    if source not in SPLIT_SOURCES:
        raise _Bad(f"{where}: 'source' {source!r} is not one of {', '.join(SPLIT_SOURCES)}")
    stride = _count(raw, "stride", where, 1, 1 << 62)
    if stride & (stride - 1):
        raise _Bad(f"{where}: 'stride' {stride} is not a power of two")
    per_rank = raw.get("ranks")
    if not isinstance(per_rank, list) or not 1 <= len(per_rank) <= MAX_RANKS:
        raise _Bad(f"{where}: 'ranks' is not a list of ranks")
    return ClassSplit(
        source=source, matched_calls=_count(raw, "matched_calls", where, 1),
        unmatched_calls=_count(raw, "unmatched_calls", where), stride=stride,
        waiting_s=_get(raw, "waiting_s", float, where), working_s=_get(raw, "working_s", float, where),
        working_call_median_s=_get(raw, "working_call_median_s", float, where),
        ranks=tuple(_rank_split(r, f"{where} rank entry {i}", comm_size, ranks) for i, r in enumerate(per_rank)))


def _clock(raw: object) -> Clock | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Bad("'clock' is not an object or null")
    methods = raw.get("methods")
    if (not isinstance(methods, list) or not methods or any(m not in CLOCK_METHODS for m in methods)
            or methods != sorted(set(methods))):
        raise _Bad(f"clock: 'methods' is not a sorted list of {', '.join(CLOCK_METHODS)}")
    return Clock(methods=tuple(methods), error_bound_s=_get(raw, "error_bound_s", float, "clock"),
                 nodes=_count(raw, "nodes", "clock", 1, MAX_RANKS))


def _call_class(raw: dict, where: str, version: int, ranks: int) -> CallClass:
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
        time_sum_s=_get(raw, "time_sum_s", float, where), ranks=_count(raw, "ranks", where, 1, MAX_RANKS),
        **({} if version < 2 else {"split": _split(raw.get("split"), where, comm_size, ranks),
                                   "split_reason": _get(raw, "split_reason", str, where)}))
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
    if isinstance(version, bool) or version not in VERSIONS:
        raise _Bad(f"profile format version {version!r}; this collkit reads versions "
                   f"{', '.join(map(str, VERSIONS))}")
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
    ranks = _count(raw, "ranks", "profile", 1, MAX_RANKS)
    classes = tuple(_call_class(c, f"class {i}", version, ranks) for i, c in enumerate(classes_raw))
    keys = [c.key for c in classes]
    if len(set(keys)) != len(keys):
        raise _Bad("two classes have the same key")
    run_id = raw.get("run_id") if version >= 2 else None
    if run_id is not None and (not isinstance(run_id, str) or len(run_id) != 16
                               or any(ch not in "0123456789abcdef" for ch in run_id)):
        raise _Bad("'run_id' is not 16 lowercase hexadecimal digits or null")
    unclassified = raw.get("unclassified", {"calls": 0, "time_max_s": 0.0})
    try:
        tuned = autotune_file.parse(raw["autotune"]) if raw.get("autotune") is not None else None
    except autotune_file.BadAutotune as e:
        raise _Bad(str(e)) from None
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
        if "collectives_busiest_rank_s" in raw else 0.0, run_id=run_id,
        clock=_clock(raw.get("clock")) if version >= 2 else None, autotune=tuned, path=path)


def require_split(profile: Profile) -> Profile:
    """The profile, when its calls could be put on one clock and split into
    waiting and working (each class's split, or its split_reason); a one-line
    UserError naming the file otherwise (a profile whose ranks wrote no clock
    data: a version-1 profile, or one from a preload before issue #41)."""
    if profile.clock is None:
        where = profile.path or "the profile"
        raise UserError(f"{where}: the profile has no clock data to split its calls into waiting and working "
                        "(its ranks' preload predates it); profile the program again with this collkit's "
                        "`collkit profile`")
    return profile


def load(path: str | Path, *, need_complete: bool = False, need_trace: bool = False,
         need_split: bool = False) -> Profile:
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
    return require_split(prof) if need_split else prof
