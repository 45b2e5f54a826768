"""A campaign directory: everything one `collkit run` produced, and nothing lost.

    DIR/spec.toml        the spec exactly as written
    DIR/resolved.json    requested and effective settings, every planned point
    DIR/metadata.json    where and with what it ran (metadata.py)
    DIR/state.json       running | interrupted | complete | incomplete
    DIR/records.jsonl    one record per point (ok, invalid, failed, skipped), appended + fsynced
    DIR/launches.jsonl   one record per launch of collkit-bench (library, hosts)
    DIR/results.csv      the consolidated table (`collkit export` format)
    DIR/library-<mpi>.txt  with metadata = "full": ompi_info / mpivars output
    DIR/tuning/NAME      the tuning files of `tuned:FILE` selections, as loaded (campaign/tuning.py)
    DIR/ranks/NAME.f32.gz  granularity = "ranks": each point's rank x iteration matrix (per_rank.py)
    DIR/raw/launch-NNNN.{points,jsonl,stderr}   what each launch was given and wrote
    DIR/.lock, DIR/runner.json, DIR/raw/running.json   the runner's lock and what it runs (ownership.py)

Records reach records.jsonl as soon as collkit-bench writes them; if collkit itself
dies, the raw files still hold them and `--resume` takes them in first. A point is
measured in several launches (its launch group runs `launches` times and more,
launch/schedule.py), and each launch's record carries its `repeat` (0, 1, ...); a
(point id, repeat) is recorded once, so nothing is lost nor doubled. The one
exception is a record marked `unstable` (measured before a steady state,
docs/bench-protocol.md): a later launch measures that repeat again, up to
record.MAX_REMEASURES times, and appends the new record with `remeasure` = 1, 2. The
file keeps every record; record.standing() picks the one that stands for each
(point, repeat), record.current() merges a point's repeats into the record that
stands for the point (campaign/repeats.py).

All campaigns under one results root are listed in ROOT/index.json."""

from __future__ import annotations

import fcntl
import json
from dataclasses import asdict
from pathlib import Path

from collkit.campaign import launch_info, ownership, per_rank, tuning
from collkit.campaign.points import Plan, Point
from collkit.campaign.record import STATUSES, Counts, Record, current, now  # noqa: F401  (now: launchers' timestamps)
from collkit.campaign.record import by_point, remeasurable, standing
from collkit.campaign import repeats
from collkit.common import atomic
from collkit.common.errors import UserError

RECORDS = "records.jsonl"


class Campaign:
    def __init__(self, path: Path):
        self.path = path
        self.raw = path / "raw"
        self._standing: dict[tuple[str, int], dict] | None = None   # record.standing() of records.jsonl, once read
        self._lock: int | None = None

    # ---------------------------------------------------------------- creating
    @classmethod
    def create(cls, path: Path, spec, plan: Plan, platform) -> "Campaign":
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the campaign directory {path}: {exc.strerror}; choose another --out") \
                from None
        # The lock first, then the emptiness check: two runs racing on one --out
        # cannot both find it empty.
        c = cls(path)
        c._lock = ownership.acquire(path)
        if any(p.name != ownership.LOCK for p in path.iterdir()):
            c.release()
            raise UserError(f"{path} already exists and is not empty; choose another --out, "
                            f"or continue it with --resume {path}")
        ownership.record_runner(path)
        index_writable(path.resolve().parent)
        c.raw.mkdir(exist_ok=True)
        atomic.write_text(path / "spec.toml", spec.text)
        tuning.write_copies(getattr(spec, "tuning", ()), path)   # DIR/tuning/NAME: what tuned: points load
        atomic.write_json(path / "resolved.json", resolved(spec, plan, platform))
        c.set_state("running", created=now())
        return c

    def take_ownership(self) -> None:
        """The exclusive lock of a runner, held until release() or exit."""
        self._lock = ownership.acquire(self.path)
        ownership.record_runner(self.path)

    def release(self) -> None:
        ownership.release(self._lock)
        self._lock = None

    @classmethod
    def open(cls, path: Path) -> "Campaign":
        if not (path / "spec.toml").is_file() or not (path / "resolved.json").is_file():
            raise UserError(f"{path} is not a collkit campaign (no spec.toml / resolved.json)")
        c = cls(path)
        c.raw.mkdir(exist_ok=True)
        return c

    # ---------------------------------------------------------------- state
    def state(self) -> dict:
        try:
            return json.loads((self.path / "state.json").read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    def set_state(self, status: str, **extra) -> None:
        st = self.state()
        st.update(extra)
        st["status"] = status
        st["updated"] = now()
        atomic.write_json(self.path / "state.json", st)

    def resolved(self) -> dict:
        path = self.path / "resolved.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"{path} cannot be read ({exc.__class__.__name__}); the campaign directory is "
                            "damaged: restore the file or start a new campaign") from None
        if not isinstance(data, dict) or not isinstance(data.get("requested", {}), dict) \
                or not isinstance(data.get("points", []), list) or not isinstance(data.get("skipped", []), list):
            raise UserError(f"{path} is not a collkit resolved.json (requested, points, skipped); "
                            "restore the file or start a new campaign")
        return data

    def plan(self) -> Plan:
        """The points resolved.json recorded, to run and skipped."""
        try:
            return Plan.from_resolved(self.resolved())
        except (TypeError, KeyError, ValueError) as exc:
            raise UserError(f"{self.path / 'resolved.json'} holds a point collkit cannot read ({exc!r}); "
                            "restore the file or start a new campaign") from None

    # ---------------------------------------------------------------- records
    def records(self) -> list[Record]:
        """Recorded points, the record that stands for each id (record.current():
        the first, or the re-measure that superseded an unstable one)."""
        return [Record.from_json(rec) for rec in current(atomic.read_jsonl(self.path / RECORDS)).values()]

    def _held(self) -> dict[tuple[str, int], dict]:
        if self._standing is None:
            self._standing = standing(atomic.read_jsonl(self.path / RECORDS))
        return self._standing

    def recorded_ids(self) -> set[str]:
        """Points with a record of at least one launch."""
        return {pid for pid, _ in self._held()}

    def recorded_keys(self) -> set[tuple[str, int]]:
        """(point id, repeat) of every standing record."""
        return set(self._held())

    def recorded_in(self, repeat: int) -> set[str]:
        """Points with a record of that repeat (launch/schedule.py)."""
        return {pid for pid, k in self._held() if k == repeat}

    def finished_ids(self) -> set[str]:
        """Points whose repetition ended (repeats.final: invalid, failed in every launch
        that ran it, skipped): no later repeat launches them."""
        return {pid for pid, recs in by_point(self._held()).items() if repeats.final(recs)}

    def point_records(self) -> dict[str, list[dict]]:
        """Each point's standing records, one per repeat, in repeat order."""
        return by_point(self._held())

    def forget(self) -> None:
        """Read records.jsonl again at the next question (after it was rewritten)."""
        self._standing = None

    def remeasure_ids(self, repeat: int | None = None) -> set[str]:
        """Points whose record (of that repeat; None: of any) is unstable with re-measures
        left: a later launch runs them again."""
        return {pid for (pid, k), rec in self._held().items()
                if remeasurable(rec) and (repeat is None or k == repeat)}

    def add(self, record: Record) -> bool:
        """Append one record unless its (point, repeat) is recorded already; one whose
        record is remeasurable gets a new timed one as its re-measure (`remeasure` one
        higher). A failure in a re-measure launch (hang, crash) leaves the marked timed
        record standing: raw/ keeps the failed launch's output, and --resume tries again."""
        key = (record.id, repeats.repeat_of(record.fields))
        held = self._held().get(key)
        if held is not None:
            # A re-measure comes from a later launch than the record it replaces:
            # --resume reads every raw launch file again (ingest_raw), and the
            # records it took in before must not come back as re-measures.
            later = int(record.fields.get("launch") or 0) > int(held.get("launch") or 0)
            if not remeasurable(held) or not record.timed or not later:
                return False
            record = record.with_fields(remeasure=int(held.get("remeasure", 0) or 0) + 1)
        # A per-rank matrix goes to its side file, the record keeps its summaries.
        record = Record.from_json(per_rank.externalise(record.to_json(), self.path))
        atomic.append_line(self.path / RECORDS, json.dumps(record.to_json(), sort_keys=False))
        self._held()[key] = record.to_json()
        return True

    def counts(self) -> Counts:
        """The campaign's planned points by status: the one place they are counted
        (run's summary, `collkit status`, report, index.json)."""
        res = self.resolved()
        try:
            planned = {d["id"] for d in res.get("points", [])} | {d["id"] for d in res.get("skipped", [])}
        except (TypeError, KeyError):
            raise UserError(f"{self.path / 'resolved.json'} lists a point without an id; restore the file "
                            "or start a new campaign") from None
        by = dict.fromkeys(STATUSES, 0)
        for r in self.records():
            if r.id in planned:
                by[r.status] += 1
        return Counts(**by, planned=len(planned))

    def add_launch(self, record: dict) -> None:
        atomic.append_line(self.path / "launches.jsonl", json.dumps(record))

    def launches(self) -> list[dict]:
        return atomic.read_jsonl(self.path / "launches.jsonl")

    def next_launch_number(self) -> int:
        numbers = [int(p.stem.split("-")[1]) for p in self.raw.glob("launch-*.points")
                   if p.stem.split("-")[1].isdigit()]
        return max(numbers, default=0) + 1

    def ingest_raw(self, planned: dict[str, Point], annotate=None) -> int:
        """Take in point records that launches wrote but collkit never copied
        (collkit was killed while they ran). Returns how many were added.
        `annotate(point, launch)` adds a launcher's own fields (SimGrid's)."""
        added = 0
        for raw in sorted(self.raw.glob("launch-*.jsonl")):
            launch = int(raw.stem.split("-")[1]) if raw.stem.split("-")[1].isdigit() else 0
            repeat = launch_repeat(raw.with_suffix(".points"))
            marks: dict = {}
            for rec in atomic.read_jsonl(raw):
                if rec.get("type") == "launch" and launch_info.oversubscribed(rec):
                    marks["oversubscribed"] = True
                point = planned.get(rec.get("id", ""))
                if rec.get("type") == "point" and point is not None:
                    extra = annotate(point, launch) if annotate is not None else {}
                    added += self.add(Record.from_bench(rec, point, launch, repeat=repeat, **marks, **extra))
        return added


REPEAT_HEADER = "# collkit repeat="


def points_text(points, m, repeat: int) -> str:
    """A launch's points file: a comment saying its round (launch/schedule.py), read
    back by launch_repeat when --resume takes in its records, then a line per point."""
    return f"{REPEAT_HEADER}{repeat}\n" + "".join(p.to_line(m) + "\n" for p in points)


def launch_repeat(points_file: Path) -> int:
    """The round a launch's points file says it ran (0 for files without the line)."""
    try:
        with open(points_file) as f:
            first = f.readline()
    except OSError:
        return 0
    value = first[len(REPEAT_HEADER):].strip()
    return int(value) if first.startswith(REPEAT_HEADER) and value.isdigit() else 0


def resolved(spec, plan: Plan, platform) -> dict:
    return {
        "requested": {
            "name": spec.name, "description": spec.description, "collectives": list(spec.collectives),
            "sizes": list(spec.sizes), "ranks": list(spec.ranks), "mpi": list(spec.mpis), "dtype": spec.dtype,
            "op": spec.op, "root": spec.root, "in_place": spec.in_place,
            "backends": {k: list(v) for k, v in spec.backends.items()}, "metadata": spec.metadata,
            "instrument": getattr(spec, "instrument", False),
            **({"tuning": [tf.describe() for tf in spec.tuning]} if getattr(spec, "tuning", ()) else {}),
            # [[case]] tables as resolved (collectives, sizes, ranks above are their union)
            **({"cases": [asdict(c) for c in spec.cases]} if getattr(spec, "cases", ()) else {}),
        },
        "measure": asdict(spec.measure),
        "platform": {"name": platform.name, "source": platform.source,
                     "mpis": {n: {"mpirun": str(m.install.mpirun), "args": list(m.install.flags),
                                  "env": m.install.env, "bench": str(m.bench)}
                              for n, m in platform.mpis.items()}},
        "points": [p.describe() for p in plan.points],
        "skipped": [p.describe() for p in plan.skipped],
    }


def index_writable(root: Path) -> None:
    """Refuse before anything runs if ROOT/index.json could not be updated at the
    end (found out only after every point had run, the summary would be lost)."""
    try:
        with open(root / ".index.lock", "a"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write the results index in {root}: {exc.strerror}; "
                        "choose an --out whose parent directory is writable") from None


def update_index(root: Path, campaign: Campaign) -> None:
    """ROOT/index.json: one entry per campaign directory under ROOT, under a lock
    so two campaigns finishing together do not lose each other's entry."""
    root.mkdir(parents=True, exist_ok=True)
    lock = root / ".index.lock"
    with open(lock, "w") as lf:
        fcntl.flock(lf, fcntl.LOCK_EX)
        index_path = root / "index.json"
        try:
            index = json.loads(index_path.read_text())
            if not isinstance(index, list):
                index = []
        except (OSError, json.JSONDecodeError):
            index = []
        res = campaign.resolved()
        st = campaign.state()
        counts = campaign.counts()
        entry = {
            "dir": campaign.path.name,
            "name": res["requested"]["name"],
            "created": st.get("created"),
            "updated": st.get("updated"),
            "status": st.get("status"),
            "points": counts.planned,
            **counts.by_status(),
        }
        index = [e for e in index if e.get("dir") != entry["dir"]] + [entry]
        atomic.write_json(index_path, sorted(index, key=lambda e: e.get("created") or ""))
