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
dies, the raw files still hold them and `--resume` takes them in first. A point id
is recorded once, so a point is never lost nor doubled; the one exception is a
record marked `unstable` (measured before a steady state, docs/bench-protocol.md):
a later launch measures the point again, up to record.MAX_REMEASURES times, and
appends the new record with `remeasure` = 1, 2. The file keeps every record;
record.current() picks the one that stands for the point.

All campaigns under one results root are listed in ROOT/index.json."""

from __future__ import annotations

import fcntl
import json
from dataclasses import asdict
from pathlib import Path

from collkit.campaign import ownership, per_rank, tuning
from collkit.campaign.points import Plan, Point
from collkit.campaign.record import STATUSES, Counts, Record, current, now  # noqa: F401  (now: launchers' timestamps)
from collkit.campaign.record import remeasurable
from collkit.common import atomic
from collkit.common.errors import UserError

RECORDS = "records.jsonl"


class Campaign:
    def __init__(self, path: Path):
        self.path = path
        self.raw = path / "raw"
        self._current: dict[str, dict] | None = None   # record.current() of records.jsonl, once read
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

    def _held(self) -> dict[str, dict]:
        if self._current is None:
            self._current = current(atomic.read_jsonl(self.path / RECORDS))
        return self._current

    def recorded_ids(self) -> set[str]:
        return set(self._held())

    def forget(self) -> None:
        """Read records.jsonl again at the next question (after it was rewritten)."""
        self._current = None

    def remeasure_ids(self) -> set[str]:
        """Points whose record is unstable with re-measures left: a later launch runs them again."""
        return {i for i, rec in self._held().items() if remeasurable(rec)}

    def add(self, record: Record) -> bool:
        """Append one record unless its point is recorded already; a point whose record
        is remeasurable gets a new timed one as its re-measure (`remeasure` one higher).
        A failure in a re-measure launch (hang, crash) leaves the marked timed record
        standing: raw/ keeps the failed launch's output, and --resume tries again."""
        held = self._held().get(record.id)
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
        self._held()[record.id] = record.to_json()
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
            for rec in atomic.read_jsonl(raw):
                point = planned.get(rec.get("id", ""))
                if rec.get("type") == "point" and point is not None:
                    extra = annotate(point, launch) if annotate is not None else {}
                    added += self.add(Record.from_bench(rec, point, launch, **extra))
        return added


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
