"""A record: what a campaign knows about one point, one line of records.jsonl.

Three kinds of record reach records.jsonl, each through one constructor here:

* `Record.from_bench`: a point collkit-bench reported (ok or invalid, with its
  times), plus what only the CLI knows (library, label, forcing environment, launch);
* `Record.skipped`: a planned point that cannot run (its reason from the plan);
* `Record.failed`: a point collkit-bench could not report on (hang, crash, a
  Slurm job that never ran it): the harness's record, with the tail of stderr.

`Record.from_json` reads a line back; `Record.from_csv_row` reads a results.csv row
(the export columns only). The typed attributes are the export's view of a record
(`analysis/results.py` writes them as the CSV and JSON columns); `fields` keeps the
stored JSON object whole, in its order, so that writing a record back changes
nothing and the fields only some readers need (`instrument`, `times_us`, launcher
fields) stay available.

Every record says what its calls were measured under: `conditions`
(campaign/conditions.py; {"mode": "synchronised"} where collkit-bench wrote none,
and for records made before the field existed, as `Record.conditions` reads them).
A record with per-rank planes also gets `working` (campaign/working.py), computed
here from the planes while they are still inline.

It lives in campaign/ beside points.py and store.py because the campaign
directory writes records (campaign/ imports of analysis/ only its leaf module
stats.py, for the working summary's interval); the readers in analysis/ and the
launchers in launch/ import it from here."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from collkit.campaign import conditions as conds
from collkit.campaign import repeats
from collkit.campaign import working
from collkit.campaign.points import Point, format_parameters, label, parse_parameters

STATUSES = ("ok", "invalid", "failed", "skipped")
BREAKDOWN_PARTS = ("comm", "reduce", "copy", "other")
# A point whose record is marked `unstable` (collkit-bench's steady-state check,
# docs/bench-protocol.md) is measured again in a later launch, at most this many
# times; two re-measures in fresh launches clear a slow start, and a point still
# unstable after them is unstable on this machine, not unlucky.
MAX_REMEASURES = 2


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Record:
    collective: str
    backend: str
    mpi: str
    algorithm: str
    ranks: int
    count: int
    bytes: int
    dtype: str
    op: str
    root: int
    in_place: bool
    status: str
    reason: str
    iterations: int
    # times and bandwidths only for a timed point (ok or invalid with iterations), else None / 0.0
    time_min_us: float | None
    time_median_us: float | None
    time_max_us: float | None
    time_p5_us: float | None
    time_p95_us: float | None
    algbw_GBps: float
    busbw_GBps: float
    sync: str
    native: str
    id: str
    # instrumented records (collkit-bench-instr) of a timed point: the time breakdown
    comm_us: float | None = None
    reduce_us: float | None = None
    copy_us: float | None = None
    other_us: float | None = None
    # collkit-bench's flag of a time below the launch's one-message floor: the reason, "" when plausible
    # (docs/bench-protocol.md); the status stays what it was
    implausible: str = ""
    # collkit-bench's mark of times that may still hold start-up costs: the reason, "" when steady
    # (docs/bench-protocol.md, "Steady state"); kept out of best, model, tune and compare verdicts
    unstable: str = ""
    # the [parameters.NAME] setting the point ran with, as format_parameters writes it ("" for none):
    # part of its identity, like the algorithm (labels, compare, tune)
    parameters: str = ""
    # the stored JSON object, whole and in order (to_json writes it back)
    fields: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def label(self) -> str:
        """How tables name what ran: 'collkit:ring', 'openmpi:ring', 'openmpi:default',
        'openmpi:binomial[segmentsize=8192]'."""
        return label(self.backend, self.mpi, self.algorithm, self.params)

    @property
    def library_default(self) -> bool:
        """The library's own choice as it ships: no forcing, no [parameters] setting."""
        return self.backend == "mpi" and self.algorithm == "default" and not self.parameters

    @property
    def params(self) -> tuple[tuple[str, str], ...]:
        return parse_parameters(self.parameters)

    @property
    def timed(self) -> bool:
        return self.time_median_us is not None

    @property
    def remeasures(self) -> int:
        """How many times this point was measured again before this record (0 for the first)."""
        return int(self.fields.get("remeasure", 0) or 0)

    @property
    def launch_medians(self) -> list[float]:
        """The point's median in each launch that measured it (campaign/repeats.py):
        one entry for a point of one launch, none for an untimed record."""
        if not self.timed:
            return []
        medians = self.fields.get("launch_medians_us")
        if isinstance(medians, list) and medians:
            return [float(m) for m in medians]
        return [float(self.time_median_us)]    # type: ignore[arg-type]

    @property
    def launch_numbers(self) -> list[int]:
        """The launch (raw/launch-N) of each entry of launch_medians."""
        numbers = self.fields.get("launch_numbers")
        if isinstance(numbers, list) and len(numbers) == len(self.launch_medians):
            return [int(n or 0) for n in numbers]
        return [int(self.fields.get("launch") or 0)] if self.timed else []

    @property
    def launch_times(self) -> list[list[float]]:
        """Each launch's iterations ([] for a launch whose record kept none)."""
        per = self.fields.get("launch_times_us")
        if isinstance(per, list) and len(per) == len(self.launch_medians):
            return [[float(v) for v in t] if isinstance(t, list) else [] for t in per]
        times = self.fields.get("times_us")
        return [[float(v) for v in times] if isinstance(times, list) else []] if self.timed else []

    @property
    def simulated(self) -> bool:
        """Measured on a simulated machine: deterministic, one launch says all."""
        return bool(self.fields.get("simulated"))

    @property
    def instrument(self) -> dict | None:
        """The bench's `instrument` object (docs/bench-protocol.md), if the record has one."""
        inst = self.fields.get("instrument")
        return inst if isinstance(inst, dict) else None

    @property
    def conditions(self) -> dict:
        """What the calls were measured under (campaign/conditions.py's record form);
        {"mode": "synchronised"} for records without the field (made before it existed)."""
        return conds.record_form(self.fields.get("conditions"))

    @property
    def working(self) -> dict | None:
        """The stored working summary (campaign/working.py), None when the record has none."""
        w = self.fields.get("working")
        return w if isinstance(w, dict) else None

    @property
    def job_failure(self) -> bool:
        """A Slurm job ended without running this point: it says nothing about the algorithm."""
        return bool(self.fields.get("job_failure"))

    def to_json(self) -> dict:
        return dict(self.fields)

    def with_fields(self, **extra) -> "Record":
        """The same record with launcher fields added (SimGrid's, Slurm's job id)."""
        return Record.from_json(self.fields | extra) if extra else self

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_json(cls, rec: dict) -> "Record":
        """A records.jsonl entry (or a collkit-bench point line)."""
        stats = rec.get("stats_us") or {}
        timed = rec.get("status") in ("ok", "invalid") and rec.get("iterations", 0) > 0

        def stat(key: str) -> float | None:
            return stats.get(key) if timed else None

        params = rec.get("parameters") if isinstance(rec.get("parameters"), dict) else {}
        inst = rec.get("instrument")
        parts = inst.get("breakdown_us") if timed and isinstance(inst, dict) else None
        parts = parts if isinstance(parts, dict) else {}
        return cls(
            collective=rec.get("collective", ""), backend=rec.get("backend", ""), mpi=rec.get("mpi", ""),
            algorithm=rec.get("algorithm", ""), ranks=int(rec.get("ranks", 0)), count=int(rec.get("count", 0)),
            bytes=int(rec.get("bytes", 0)), dtype=rec.get("dtype", ""), op=rec.get("op", ""),
            root=int(rec.get("root", 0)), in_place=bool(rec.get("in_place", False)), status=rec.get("status", ""),
            reason=rec.get("reason", ""), iterations=int(rec.get("iterations", 0)),
            time_min_us=stat("min"), time_median_us=stat("median"), time_max_us=stat("max"),
            time_p5_us=stat("p5"), time_p95_us=stat("p95"),
            algbw_GBps=float(rec.get("algbw_GBps", 0.0)) if timed else 0.0,
            busbw_GBps=float(rec.get("busbw_GBps", 0.0)) if timed else 0.0,
            sync=rec.get("sync", ""), native=str(rec.get("native", "")), id=rec.get("id", ""),
            comm_us=parts.get("comm"), reduce_us=parts.get("reduce"), copy_us=parts.get("copy"),
            other_us=parts.get("other"),
            implausible=str(rec.get("implausible") or "") if timed else "",
            unstable=str(rec.get("unstable") or "") if timed else "",
            parameters=format_parameters(tuple((str(k), str(v)) for k, v in params.items())),
            fields=dict(rec),
        )

    @classmethod
    def from_bench(cls, line: dict, point: Point, launch: int, **extra) -> "Record":
        """A collkit-bench point line plus what only the CLI knows; `extra`: a launcher's own fields."""
        out = {k: v for k, v in line.items() if k != "type"}
        out.update(mpi=point.mpi, label=point.label, native=point.native, env=dict(point.env),
                   cvars=dict(point.cvars), launch=launch, recorded=now())
        out["in_place"] = bool(out.get("in_place", point.in_place))
        out["conditions"] = conds.record_form(out.get("conditions"))
        if out.get("status") in ("ok", "invalid") and (w := working.of_record(out)) is not None:
            out["working"] = w
        if point.tuning_file:
            # What the library reports its tuning-file variable to be (MPI_T), beside the copy
            # launched: whichever library's variable the point read back (a point reads its own)
            from collkit.backends.families import tuning_file_variables
            effective = out.get("effective") if isinstance(out.get("effective"), dict) else {}
            named = next((effective[v] for v in tuning_file_variables() if v in effective), "")
            out.update(tuning_file=point.tuning_file, tuning_sha256=point.tuning_sha256, tuning_file_cvar=named)
        if point.params:
            # The setting, and what the library reports it ran with: MPI_T's value where the
            # point read it back, None where the library reports nothing (NCCL, SimGrid).
            effective = out.get("effective") if isinstance(out.get("effective"), dict) else {}
            out["parameters"] = dict(point.params)
            out["parameters_read"] = {k: (effective.get(k) if k in point.readback else None) for k, _ in point.params}
        out.update(extra)
        return cls.from_json(out)

    @classmethod
    def skipped(cls, point: Point) -> "Record":
        """A planned point that cannot run, with the plan's reason."""
        return cls._harness(point, "skipped", point.skip_reason, None, "")

    @classmethod
    def failed(cls, point: Point, reason: str, launch: int | None = None, stderr_tail: str = "",
               **extra) -> "Record":
        """A point collkit-bench could not report on (hung, crashed, its job never ran it)."""
        return cls._harness(point, "failed", reason, launch, stderr_tail, **extra)

    @classmethod
    def _harness(cls, point: Point, status: str, reason: str, launch: int | None, stderr_tail: str,
                 **extra) -> "Record":
        rec = {k: v for k, v in point.describe().items() if k not in ("skip_reason", "readback")}
        rec.update(status=status, reason=reason, iterations=0, times_us=[], stats_us={}, algbw_GBps=0.0,
                   busbw_GBps=0.0, label=point.label, launch=launch, recorded=now(),
                   conditions=point.conditions.record())
        if stderr_tail:
            rec["stderr_tail"] = stderr_tail
        rec.update(extra)
        return cls.from_json(rec)

    @classmethod
    def from_csv_row(cls, row: dict[str, str]) -> "Record":
        """A results.csv row (analysis/results.py's columns): the export view, no more."""
        def num(key: str) -> float | None:
            v = row.get(key, "")
            return float(v) if v not in ("", None) else None

        def integer(key: str) -> int:
            v = row.get(key, "")
            return int(v) if v not in ("", None) else 0

        return cls(
            collective=row.get("collective", ""), backend=row.get("backend", ""), mpi=row.get("mpi", ""),
            algorithm=row.get("algorithm", ""), ranks=integer("ranks"), count=integer("count"),
            bytes=integer("bytes"), dtype=row.get("dtype", ""), op=row.get("op", ""), root=integer("root"),
            in_place=bool(integer("in_place")), status=row.get("status", ""), reason=row.get("reason", ""),
            iterations=integer("iterations"), time_min_us=num("time_min_us"),
            time_median_us=num("time_median_us"), time_max_us=num("time_max_us"),
            time_p5_us=num("time_p5_us"), time_p95_us=num("time_p95_us"),
            algbw_GBps=num("algbw_GBps") or 0.0, busbw_GBps=num("busbw_GBps") or 0.0,
            sync=row.get("sync", ""), native=row.get("native", ""), id=row.get("id", ""),
            comm_us=num("comm_us"), reduce_us=num("reduce_us"), copy_us=num("copy_us"), other_us=num("other_us"),
            implausible=row.get("implausible", "") or "", unstable=row.get("unstable", "") or "",
            parameters=row.get("parameters", "") or "", fields=dict(row),
        )


def _remeasure(rec: dict) -> int:
    return int(rec.get("remeasure", 0) or 0)


def remeasurable(rec: dict) -> bool:
    """A stored record that a later launch's record of the same point may supersede:
    timed, marked unstable, and with re-measures left."""
    timed = rec.get("status") in ("ok", "invalid") and int(rec.get("iterations", 0) or 0) > 0
    return timed and bool(rec.get("unstable")) and _remeasure(rec) < MAX_REMEASURES


def standing(recs: list[dict]) -> dict[tuple[str, int], dict]:
    """The record that stands for each (point id, repeat), from records.jsonl's objects
    in file order: the first one, superseded by the next one of its id and repeat while
    it is remeasurable() (a re-measure). The superseded ones stay in the file."""
    out: dict[tuple[str, int], dict] = {}
    for rec in recs:
        if not isinstance(rec, dict) or not rec.get("id") or rec.get("status") not in STATUSES:
            continue
        key = (rec["id"], repeats.repeat_of(rec))
        held = out.get(key)
        if held is None or (remeasurable(held) and _remeasure(rec) > _remeasure(held)):
            out[key] = rec
    return out


def by_point(held: dict[tuple[str, int], dict]) -> dict[str, list[dict]]:
    """standing()'s records grouped by point id, in repeat order."""
    out: dict[str, list[dict]] = {}
    for (pid, _), rec in sorted(held.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.setdefault(pid, []).append(rec)
    return out


def current(recs: list[dict]) -> dict[str, dict]:
    """The record that stands for each point id: its standing records of every launch
    merged (campaign/repeats.py; a point of one launch: that record). Every reader of
    records.jsonl picks records through here."""
    grouped = by_point(standing(recs))
    # file order of first appearance, as readers always saw it
    order = {}
    for rec in recs:
        if isinstance(rec, dict) and rec.get("id") in grouped:
            order.setdefault(rec["id"], len(order))
    return {pid: repeats.merge(grouped[pid]) for pid in sorted(grouped, key=lambda i: order.get(i, 0))}


@dataclass(frozen=True)
class Counts:
    """Points of a campaign by status; `unrecorded`: planned points with no record yet."""
    ok: int = 0
    invalid: int = 0
    failed: int = 0
    skipped: int = 0
    planned: int = 0

    @property
    def recorded(self) -> int:
        return self.ok + self.invalid + self.failed + self.skipped

    @property
    def unrecorded(self) -> int:
        return self.planned - self.recorded

    def by_status(self) -> dict[str, int]:
        return {s: getattr(self, s) for s in STATUSES}

    def line(self) -> str:
        """'26 ok, 1 invalid, 1 failed, 1 skipped'"""
        return ", ".join(f"{n} {s}" for s, n in self.by_status().items())
