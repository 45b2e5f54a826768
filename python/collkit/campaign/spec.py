"""Experiment specs: what a campaign measures, written once, portably (TOML).

    name = "quickstart"
    collectives = ["allreduce", "bcast"]
    sizes = "8B..16MiB x8"          # or a list: ["8B", "1KiB", "1MiB"]
    ranks = [4, 8]
    mpi = ["openmpi"]               # MPI libraries of the platform
    dtype = "int32"                 # int8 int32 int64 float double
    op = "sum"                      # sum max min prod
    root = 0
    in_place = false
    instrument = false              # true: collkit-bench-instr, phase/step time breakdowns
    platforms = ["sim:fattree-small", "sim:dragonfly-small"]  # optional: run on each (no --platform)

    [[case]]                        # optional, repeatable: another kind of call in the same campaign
    collectives = "allreduce"       # each case may set collectives, sizes, ranks, dtype, op, root,
    sizes = [8, 4096]               # in_place; a key it leaves out is the top level's; with cases,
    ranks = 4                       # the top-level collectives, sizes and ranks are optional
    dtype = "double"
    op = "max"

    [backends]
    mpi = ["default", "all"]        # the library's choice, and every forceable algorithm
                                    # "tuned:FILE": the library's choice with a tuning file
                                    # (Open MPI rules or MPICH JSON; docs/tuning-files.md)
    collkit = "all"                 # libcollkit: "all" or names ("ring", "allreduce/ring")
    nccl = ["default", "ring.ll128"] # NCCL on GPUs (collkit-bench-nccl, docs/gpu.md)

    [parameters.openmpi]            # optional: a library's parameters as dimensions, one table per
    coll_tuned_bcast_algorithm_segmentsize = [0, 8192]   # MPI of `mpi` (or "nccl"); names as the
                                    # library spells them, each a value or a list; every
                                    # combination crosses the library's algorithms (docs/campaigns.md, "Library parameters")

    [gpu]
    device = "local_rank"           # nccl: local rank modulo the node's GPUs, or a list of device numbers

    [measure]
    warmup = 2
    min_iterations = 5
    max_iterations = 1000
    time_budget_s = 0.05
    sync = "dissemination"          # dissemination | mpi_barrier | window
    validate = "first"              # first | all | none
    timeout_s = 120                 # per point
    launch_warmup_s = 0.2           # optional: every rank exchanges with every peer this long first
    settle_s = 0.2                  # optional: bound on a point's warm-up windows (0: none)
                                    # (both absent: collkit-bench's defaults, docs/bench-protocol.md)
    granularity = "max"             # max: the slowest rank per iteration | ranks: also every
                                    # rank's times and skews | none: aggregates only
    launches = 3                    # each launch group runs this many times at least, interleaved
    max_launches = 5                # ... and up to this many while a point's interval from its
    launch_tolerance = 0.25         # launches is wider than this fraction of its estimate (unset
                                    # with launches set: exactly `launches`)
    launch_seed = 1                 # seed of the launches' interleaved order (simulated: 1 launch)
    conditions = "synchronised"     # synchronised | program: back to back, each rank paced by
    gap_us = 0                      # the program's gap and its own arrival skew (skew_us: per
    skew_us = [[0, ...], ...]       # rank, 11 quantiles); a [[case]] may set these three too
                                    # (campaign/conditions.py)

A [[case]] may also set conditions, gap_us and skew_us (what it leaves out is
[measure]'s): per case because skew_us has one list per rank, and a profile's
classes differ in rank count and in how their ranks arrive (spec --from-profile).

A spec with [[case]] tables measures the union of its cases' points (plan.py makes
each case's points and keeps one per point id); a spec without them measures the top
level's collectives x sizes x ranks, exactly as before cases existed. The Spec's
collectives, sizes and ranks are then the cases' union (what summaries and
resolved.json list), and `variants()` gives one Spec per case.

Loading checks every key and value and raises UserError (one line) on the first
problem, a case's problem prefixed "case N: " (N counts the [[case]] tables from 1);
resolving names against the registry and the libraries is plan.py's job."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from collkit.backends import devices
from collkit.campaign import conditions as conds
from collkit.campaign import tuning as tunings
from collkit.campaign.sizes import parse_sizes
from collkit.common.safe import check_name, refuse_control
from collkit.common.errors import UserError, did_you_mean
from collkit.library import registry
from collkit.library.registry import COLLECTIVES, SPEC_OPS, check_collective

OPS = SPEC_OPS    # the ops a spec measures: libcollkit's table (lib/core/ops.c)
SYNCS = ("dissemination", "mpi_barrier", "window")
VALIDATIONS = ("first", "all", "none")
GRANULARITIES = ("max", "ranks", "none")   # docs/bench-protocol.md, "Granularity"
# The MPI library's own algorithms, libcollkit's, then the device backends' (backends/devices.py)
BACKENDS = ("mpi", "collkit", *devices.keys())
METADATA_LEVELS = ("minimal", "standard", "full")
MAX_COUNT = 2**31 - 1  # counts travel to MPI as int
INT_MAX = 2**31 - 1    # collkit-bench reads warm-ups, iterations and roots as C ints
MAX_BUDGET_S = 3600.0  # time budget of one point
MAX_TIMEOUT_S = 7 * 86400.0  # a point silent for longer is hung, whatever the machine
MAX_RANKS = 1 << 20    # no launcher or simulator here goes beyond

_TOP_KEYS = ("name", "description", "collectives", "sizes", "ranks", "mpi", "dtype", "op", "root",
             "in_place", "backends", "measure", "metadata", "instrument", "platforms", *devices.tables(),
             "case", "parameters", "from_profile")
# [from_profile]: the profile `collkit spec --from-profile` wrote the spec from, so
# that `collkit trial --campaign DIR` predicts from that profile by default.
_FROM_PROFILE_KEYS = ("path", "sha256")
# What one [[case]] may set; what it leaves out it takes from the top level.
_CASE_KEYS = ("collectives", "sizes", "ranks", "dtype", "op", "root", "in_place", *conds.KEYS)
# Keys a user plausibly writes for something the spec says another way.
_MEANT = {
    "algorithms": "algorithms are chosen per backend, e.g. [backends] collkit = [\"ring\"], mpi = [\"default\", \"all\"]",
    "algorithm": "algorithms are chosen per backend, e.g. [backends] collkit = [\"ring\"], mpi = [\"default\", \"all\"]",
    "collective": "the key is 'collectives' (a name or a list)",
    "size": "the key is 'sizes' (a list or a range like \"8B..16MiB x2\")",
    "nranks": "the key is 'ranks' (a number or a list)",
    "np": "the key is 'ranks' (a number or a list)",
}
_MEASURE_KEYS = ("warmup", "min_iterations", "max_iterations", "time_budget_s", "sync", "validate",
                 "timeout_s", "launch_warmup_s", "settle_s", "granularity", "launches", "max_launches",
                 "launch_tolerance", "launch_seed", *conds.KEYS)
MAX_STEADY_S = 60.0    # collkit-bench's bound on launch_warmup_s and settle_s
# Repeated launches (docs/bench-protocol.md, "Launches"; launch/schedule.py): every launch
# group runs LAUNCHES times at least, in a seeded interleaved order, and up to
# MAX_LAUNCHES while a point's interval from its launches is wider than
# LAUNCH_TOLERANCE of its estimate (half width over estimate). Simulated platforms run
# one launch: their times are deterministic.
LAUNCHES = 3
MAX_LAUNCHES = 5
# A 95 % interval from 3 launches is +-2.5 standard deviations of their log medians:
# 25 % asks for more launches where the launches of a point move by more than about
# 10 % (a machine that draws states per launch), not for every point of a noisy one.
LAUNCH_TOLERANCE = 0.25
LAUNCH_LIMIT = 100     # launches of one group: beyond, a campaign is a different experiment


@dataclass(frozen=True)
class Measure:
    warmup: int = 2
    min_iterations: int = 5
    max_iterations: int = 1000
    time_budget_s: float = 0.05
    sync: str = "dissemination"
    validate: str = "first"
    timeout_s: float = 120.0
    # Steady state (docs/bench-protocol.md): None leaves the key out of the points file,
    # and collkit-bench's default applies (its one home, bench/steady.h).
    launch_warmup_s: float | None = None
    settle_s: float | None = None
    # What records keep of the timed iterations: "max" (the slowest rank per iteration,
    # collkit-bench's default: its points-file key is then left out), "ranks", "none".
    granularity: str = "max"
    # What the calls are measured under (campaign/conditions.py): synchronised (the
    # default, nothing in the points file) or the program's gap and per-rank skew.
    conditions: conds.Conditions = conds.SYNCHRONISED
    # Launches of each launch group (launch/schedule.py): at least `launches`, more up to
    # `max_launches` while a point's launch interval is wider than `launch_tolerance`
    # (relative half width), in an order drawn from `launch_seed`.
    launches: int = LAUNCHES
    max_launches: int = MAX_LAUNCHES
    launch_tolerance: float = LAUNCH_TOLERANCE
    launch_seed: int = 1


@dataclass(frozen=True)
class Case:
    """One kind of call: the fields of a point that a [[case]] sets."""
    collectives: tuple[str, ...]
    sizes: tuple[int, ...]
    ranks: tuple[int, ...]
    dtype: str
    op: str
    root: int
    in_place: bool
    conditions: conds.Conditions | None = None   # its own conditions; None: [measure]'s


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    collectives: tuple[str, ...]
    sizes: tuple[int, ...]          # bytes of one count (one block for data-movement collectives)
    ranks: tuple[int, ...]
    mpis: tuple[str, ...]
    dtype: str
    op: str
    root: int
    in_place: bool
    backends: dict[str, tuple[str, ...]]  # backend -> selections ("default", "all", names)
    measure: Measure
    metadata: str
    text: str                        # the spec exactly as written, kept in the campaign
    instrument: bool = False         # launch collkit-bench-instr: records carry tag breakdowns
    platforms: tuple[str, ...] = ()  # platforms the spec runs on when --platform is not given
    gpu_device: str = "local_rank"   # [gpu] device: the GPU backend's device per rank (backends/nccl.py)
    # the tuning files of backends.mpi's "tuned:FILE" entries, read when the spec is
    # loaded from a file (load()); a spec parsed from a campaign's copy has none: its
    # points, with the campaign's copies, are in resolved.json
    tuning: tuple[tunings.TuningFile, ...] = ()
    cases: tuple[Case, ...] = ()     # [[case]] tables, resolved against the top level; () when none
    # [parameters.NAME]: MPI name (or a device backend's key) -> parameter -> values as written; checked
    # against what the library reports in plan.py (backends/parameters.py)
    parameters: dict[str, dict[str, tuple]] = field(default_factory=dict)
    from_profile: "FromProfile | None" = None   # [from_profile]: the profile the spec was written from

    def variants(self) -> tuple["Spec", ...]:
        """One spec per case, each without cases (plan.py makes each one's points):
        the spec itself when it has no [[case]]."""
        if not self.cases:
            return (self,)
        return tuple(replace(self, collectives=c.collectives, sizes=c.sizes, ranks=c.ranks, dtype=c.dtype,
                             op=c.op, root=c.root, in_place=c.in_place, cases=(),
                             measure=replace(self.measure, conditions=c.conditions) if c.conditions else self.measure)
                     for c in self.cases)


def _unknown(key: str, allowed: tuple[str, ...], where: str) -> UserError:
    extra = did_you_mean(key, allowed)
    return UserError(f"unknown key '{key}' in {where}{extra}; allowed: {', '.join(allowed)}")


def _choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if isinstance(value, str) and value in allowed:
        return value
    extra = did_you_mean(str(value), allowed)
    return _raise(f"unknown {what} {value!r}{extra}; choose one of {', '.join(allowed)}")


def _raise(msg: str):
    raise UserError(msg)


def _int(value: object, what: str, lo: int, hi: int = INT_MAX) -> int:
    """An integer in [lo, hi]; hi defaults to what collkit-bench accepts (C int)."""
    if isinstance(value, bool) or not isinstance(value, int):
        _raise(f"{what} must be an integer, not {value!r}")
    if value < lo:
        _raise(f"{what} must be at least {lo}, not {value}")
    if value > hi:
        _raise(f"{what} must be at most {hi}, not {value}")
    return value


def _number(value: object, what: str, hi: float) -> float:
    """A finite number in [0, hi]: nan and inf are refused (an infinite timeout
    would switch the hang watchdog off)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _raise(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value):
        _raise(f"{what} must be a finite number of seconds, not {value}")
    if value < 0:
        _raise(f"{what} must not be negative, not {value}")
    if value > hi:
        _raise(f"{what} must be at most {hi:g} s, not {value:g}")
    return float(value)


def _fraction(value: object, what: str) -> float:
    """A finite number in (0, 10]: a relative tolerance."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _raise(f"{what} must be a finite number, not {value!r}")
    if not 0 < value <= 10:
        _raise(f"{what} must be above 0 and at most 10 (a fraction of the estimate: 0.1 is 10 %), not {value:g}")
    return float(value)


def _str_list(value: object, what: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        _raise(f"{what} must be a name or a non-empty list of names, not {value!r}")
    return tuple(dict.fromkeys(items))


def _table(raw: object, keys: tuple[str, ...], where: str, shape: str = "a table") -> dict:
    """RAW as the table WHERE ("[measure]"), every key one of KEYS; else one line."""
    if not isinstance(raw, dict):
        _raise(f"{where} must be {shape}")
    for key in raw:
        if key not in keys:
            raise _unknown(key, keys, where)
    return raw


def _measure(raw: object) -> Measure:
    raw = _table(raw, _MEASURE_KEYS, "[measure]")
    d = Measure()
    m = Measure(
        warmup=_int(raw.get("warmup", d.warmup), "measure.warmup", 0),
        min_iterations=_int(raw.get("min_iterations", d.min_iterations), "measure.min_iterations", 1),
        max_iterations=_int(raw.get("max_iterations", d.max_iterations), "measure.max_iterations", 1),
        time_budget_s=_number(raw.get("time_budget_s", d.time_budget_s), "measure.time_budget_s", MAX_BUDGET_S),
        sync=_choice(raw.get("sync", d.sync), SYNCS, "measure.sync"),
        validate=_choice(raw.get("validate", d.validate), VALIDATIONS, "measure.validate"),
        timeout_s=_number(raw.get("timeout_s", d.timeout_s), "measure.timeout_s", MAX_TIMEOUT_S),
        launch_warmup_s=_number(raw["launch_warmup_s"], "measure.launch_warmup_s", MAX_STEADY_S)
        if "launch_warmup_s" in raw else None,
        settle_s=_number(raw["settle_s"], "measure.settle_s", MAX_STEADY_S) if "settle_s" in raw else None,
        granularity=_choice(raw.get("granularity", d.granularity), GRANULARITIES, "measure.granularity"),
        conditions=conds.parse(raw, "measure") or d.conditions,
        launches=_int(raw.get("launches", d.launches), "measure.launches", 1, LAUNCH_LIMIT),
        max_launches=_int(raw["max_launches"], "measure.max_launches", 1, LAUNCH_LIMIT)
        if "max_launches" in raw else 0,
        launch_tolerance=_fraction(raw.get("launch_tolerance", d.launch_tolerance), "measure.launch_tolerance"),
        launch_seed=_int(raw.get("launch_seed", d.launch_seed), "measure.launch_seed", 0),
    )
    if not m.max_launches:
        # unset: the default's adaptive bound, or exactly `launches` where the spec chose a number
        m = replace(m, max_launches=m.launches if "launches" in raw else d.max_launches)
    if m.max_launches < m.launches:
        _raise(f"measure.max_launches ({m.max_launches}) is below launches ({m.launches}); "
               "give max_launches >= launches")
    conds.check_measure(m.conditions, m.sync, m.granularity, "measure")
    if m.max_iterations < m.min_iterations:
        _raise(f"measure.max_iterations ({m.max_iterations}) is below min_iterations ({m.min_iterations})")
    if m.timeout_s <= 0:
        _raise("measure.timeout_s must be positive")
    return m


def parse(text: str, source: str = "spec", default_name: str = "campaign", spec_dir: Path | None = None) -> Spec:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{source} is not valid TOML: {exc}") from None
    try:
        refuse_control({k: v for k, v in raw.items() if k != "description"}, "")
        spec = _parse(raw, text, default_name)
        if spec_dir is not None and "mpi" in spec.backends:
            spec = replace(spec, tuning=tunings.resolve(spec.backends["mpi"], spec_dir))
        return spec
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None


def _parse(raw: dict, text: str, default_name: str) -> Spec:
    for key in raw:
        if key in _MEANT:
            _raise(f"unknown key '{key}' in the spec: {_MEANT[key]}")
        if key not in _TOP_KEYS:
            raise _unknown(key, _TOP_KEYS, "the spec")
    for key in ("collectives", "sizes", "ranks", "backends"):
        if key not in raw and (key == "backends" or "case" not in raw):
            _raise(f"missing required key '{key}'")
    measure = _measure(raw.get("measure", {}))
    if "case" in raw:
        top, cases = _cases(raw, measure)
    else:
        top, cases = _case(raw), ()
        conds.check_ranks(measure.conditions, top.ranks, "measure")
    instrument = raw.get("instrument", False)
    if not isinstance(instrument, bool):
        _raise(f"instrument must be true or false, not {instrument!r}")

    backends_raw = raw["backends"]
    if not isinstance(backends_raw, dict) or not backends_raw:
        _raise("[backends] must be a table naming at least one of: mpi, collkit")
    backends: dict[str, tuple[str, ...]] = {}
    for key, value in backends_raw.items():
        if key not in BACKENDS:
            raise _unknown(key, BACKENDS, "[backends]")
        backends[key] = _str_list(value, f"backends.{key}")
    if "collkit" in backends and "default" in backends["collkit"]:
        _raise("backends.collkit has no 'default'; use 'all' or algorithm names")
    # the tables a device backend reads ([gpu]), checked by it, as Spec fields
    device_fields: dict[str, object] = {}
    for device in devices.DEVICE_BACKENDS:
        device_fields |= device.spec_fields(raw, device.key in backends)
    if "collkit" in backends and any(tunings.is_tuned(s) for s in backends["collkit"]):
        _raise("backends.collkit has no tuning files; write \"tuned:FILE\" under backends.mpi")
    for sel in backends.get("mpi", ()):
        if sel == tunings.PREFIX:
            _raise("backends.mpi 'tuned:' names no file; write \"tuned:PATH\" (relative to the spec or absolute)")

    mpis = _str_list(raw.get("mpi", "openmpi"), "mpi")
    if "name" in raw:
        name = check_name(raw["name"], "", "name")
    else:
        name = check_name(default_name, "", "the campaign name (taken from the file name; set `name = ...`)")
    description = raw.get("description", "")
    if not isinstance(description, str):
        _raise("description must be a string")

    return Spec(
        name=name,
        description=description,
        collectives=top.collectives,
        sizes=top.sizes,
        ranks=top.ranks,
        mpis=mpis,
        dtype=top.dtype,
        op=top.op,
        root=top.root,
        in_place=top.in_place,
        backends=backends,
        measure=measure,
        metadata=_choice(raw.get("metadata", "standard"), METADATA_LEVELS, "metadata"),
        text=text,
        instrument=instrument,
        platforms=_str_list(raw["platforms"], "platforms") if "platforms" in raw else (),
        cases=cases,
        parameters=_parameters(raw["parameters"], mpis, backends) if "parameters" in raw else {},
        from_profile=_from_profile(raw["from_profile"]) if "from_profile" in raw else None,
        **device_fields,
    )


@dataclass(frozen=True)
class FromProfile:
    """The profile a spec was written from (`collkit spec --from-profile`): its
    absolute path and the SHA-256 of its bytes, so that a profile written again
    at the same path is not taken for it."""
    path: str
    sha256: str


def _from_profile(raw: object) -> FromProfile:
    raw = _table(raw, _FROM_PROFILE_KEYS, "[from_profile]",
                 "a table with path and sha256 (collkit spec --from-profile writes it)")
    path, sha = raw.get("path"), raw.get("sha256")
    if not isinstance(path, str) or not path.startswith("/"):
        _raise(f"from_profile.path must be the profile's absolute path, not {path!r}")
    if not isinstance(sha, str) or len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
        _raise(f"from_profile.sha256 must be 64 lowercase hexadecimal digits, not {sha!r}")
    return FromProfile(path=path, sha256=sha)


def _parameters(raw: object, mpis: tuple[str, ...], backends: dict) -> dict[str, dict[str, tuple]]:
    """[parameters.NAME] tables: their shape only (names and values are the library's
    to judge, in plan.py). NAME is an MPI of `mpi` whose mpi-backend points they cross,
    or a device backend's table for its points (backends/devices.py)."""
    if not isinstance(raw, dict) or not raw:
        _raise("[parameters] must hold tables named after an MPI of `mpi`, e.g. [parameters.openmpi]")
    own = [d.parameter_table for d in devices.chosen(backends)]
    tables = [*mpis, *own]
    nor = "".join(f" nor the {d.key} backend" for d in devices.DEVICE_BACKENDS)
    out: dict[str, dict[str, tuple]] = {}
    for table, params in raw.items():
        if table not in tables:
            _raise(f"[parameters.{table}] names no MPI of `mpi`{nor}{did_you_mean(table, tables)}; "
                   f"use one of: {', '.join(tables)}")
        if table not in own and "mpi" not in backends:
            _raise(f"[parameters.{table}] shapes the library's own algorithms, and [backends] has no mpi")
        if not isinstance(params, dict) or not params:
            _raise(f"[parameters.{table}] must be a table of parameter = value or [values]")
        out[table] = {}
        for name, value in params.items():
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, (int, str, bool)) for v in values):
                _raise(f"parameters.{table}.{name} must be a value or a non-empty list of integers, strings or "
                       f"booleans, not {value!r}")
            out[table][name] = tuple(values)
    return out


def _collectives(raw: object) -> tuple[str, ...]:
    return tuple(check_collective(c) for c in _str_list(raw, "collectives"))


def _ranks(raw: object) -> tuple[int, ...]:
    ranks_raw = raw if isinstance(raw, list) else [raw]
    if not ranks_raw:
        _raise("ranks is an empty list")
    return tuple(sorted({_int(r, "ranks", 1, MAX_RANKS) for r in ranks_raw}))


def _in_place(raw: object) -> bool:
    if not isinstance(raw, bool):
        _raise(f"in_place must be true or false, not {raw!r}")
    return raw


def _case(raw: dict) -> Case:
    """The point keys of the top level, or of one case merged over it, checked together."""
    for key in ("collectives", "sizes", "ranks"):
        if key not in raw:
            _raise(f"missing required key '{key}'")
    collectives = _collectives(raw["collectives"])
    dtype = _choice(raw.get("dtype", "int32"), registry.datatype_names(), "dtype")
    esize = registry.datatype_size(dtype)
    op = _choice(raw.get("op", "sum"), OPS, "op")

    sizes = parse_sizes(raw["sizes"])
    for size in sizes:
        if size % esize:
            _raise(f"size {size} B is not a whole number of {dtype} elements ({esize} B each)")
        if size // esize > MAX_COUNT:
            _raise(f"size {size} B is {size // esize} {dtype} elements, above MPI's int count limit")

    ranks = _ranks(raw["ranks"])
    root = _int(raw.get("root", 0), "root", 0)
    if root >= ranks[0]:
        _raise(f"root {root} is not a rank of the {ranks[0]}-rank runs")
    return Case(collectives, tuple(sizes), ranks, dtype, op, root, _in_place(raw.get("in_place", False)))


def _cases(raw: dict, measure: Measure) -> tuple[Case, tuple[Case, ...]]:
    """[[case]] tables: each merged over the top level's point keys and checked like
    it. The top level's own keys are checked one by one (a case may override any of
    them, so they need not fit together). Returns the union as the top-level Case
    (collectives in order of appearance, sizes and ranks sorted; dtype, op, root and
    in_place the top level's) and the cases."""
    tables = raw["case"]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        _raise("case must be an array of tables: write each kind of call as a [[case]] table")
    if "collectives" in raw:
        _collectives(raw["collectives"])
    if "ranks" in raw:
        _ranks(raw["ranks"])
    if "sizes" in raw:
        parse_sizes(raw["sizes"])
    dtype = _choice(raw.get("dtype", "int32"), registry.datatype_names(), "dtype")
    op = _choice(raw.get("op", "sum"), OPS, "op")
    root = _int(raw.get("root", 0), "root", 0)
    in_place = _in_place(raw.get("in_place", False))
    top = {k: raw[k] for k in _CASE_KEYS if k in raw}
    cases = []
    for i, table in enumerate(tables, 1):
        try:
            for key in table:
                if key in _MEANT:
                    _raise(f"unknown key '{key}': {_MEANT[key]}")
                if key not in _CASE_KEYS:
                    raise _unknown(key, _CASE_KEYS, "the case")
            case = _case(top | table)
            own = conds.parse(table, "case", measure.conditions)
            if own is not None:
                conds.check_measure(own, measure.sync, measure.granularity, "case")
                case = replace(case, conditions=own)
            conds.check_ranks(own or measure.conditions, case.ranks, "case" if own else "measure")
            cases.append(case)
        except UserError as exc:
            raise UserError(f"case {i}: {exc}") from None
    union = Case(collectives=tuple(dict.fromkeys(c for case in cases for c in case.collectives)),
                 sizes=tuple(sorted({s for case in cases for s in case.sizes})),
                 ranks=tuple(sorted({r for case in cases for r in case.ranks})),
                 dtype=dtype, op=op, root=root, in_place=in_place)
    return union, tuple(cases)


def load(path: Path) -> Spec:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read spec {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a UTF-8 text file; a spec is TOML text") from None
    return parse(text, source=str(path), default_name=path.stem, spec_dir=path.resolve().parent)


__all__ = ["Spec", "Case", "Measure", "parse", "load", "OPS", "SYNCS", "VALIDATIONS", "BACKENDS",
           "COLLECTIVES"]
