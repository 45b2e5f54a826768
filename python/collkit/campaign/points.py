"""Test points: one measurement of one algorithm at one size and rank count.

A point's id is derived from everything that makes it distinct, so the same spec
always yields the same ids; resume and de-duplication rely on that."""

from __future__ import annotations

from dataclasses import dataclass, field

from collkit.backends import devices
from collkit.campaign.conditions import SYNCHRONISED, Conditions
from collkit.campaign.spec import Measure


def variant(algorithm: str, params: tuple[tuple[str, str], ...] = ()) -> str:
    """An algorithm with the library parameters it ran with, the one form tables, tune
    and compare name it by: 'binomial', 'binomial[segmentsize=8192]' (short names,
    backends/parameters.short; several joined with ',')."""
    if not params:
        return algorithm
    from collkit.backends.parameters import short
    return f"{algorithm}[{','.join(f'{short(k)}={v}' for k, v in params)}]"


def algorithm_of(name: str) -> str:
    """The algorithm of a variant() name: 'chain' for 'chain[segmentsize=8192]'."""
    return name.split("[", 1)[0]


def format_parameters(params: tuple[tuple[str, str], ...]) -> str:
    """A setting as one string (export column, compare key): 'NAME=VALUE;NAME=VALUE', '' for none."""
    return ";".join(f"{k}={v}" for k, v in params)


def parse_parameters(text: str) -> tuple[tuple[str, str], ...]:
    """The inverse of format_parameters."""
    return tuple(tuple(item.split("=", 1)) for item in text.split(";") if "=" in item)  # type: ignore[misc]


# Backends whose points are named by the backend, not by the MPI that launches them:
# libcollkit's and the device backends' (backends/devices.py)
_NAMED_BY_BACKEND = ("collkit", *devices.keys())


def label(backend: str, mpi: str, algorithm: str, params: tuple[tuple[str, str], ...] = ()) -> str:
    """How tables name what ran: 'collkit:ring', 'openmpi:ring', 'openmpi:default', 'nccl:ring.ll128',
    'openmpi:binomial[segmentsize=8192]'."""
    return f"{backend if backend in _NAMED_BY_BACKEND else mpi}:{variant(algorithm, params)}"


@dataclass(frozen=True)
class Point:
    collective: str
    backend: str                 # "mpi" | "collkit" | a device backend's key (backends/devices.py)
    mpi: str                     # MPI library the launch uses
    algorithm: str               # canonical name; "default" for the library's own choice
    ranks: int
    count: int
    bytes: int
    dtype: str
    op: str
    root: int
    in_place: bool
    native: str = ""             # the library's own name/id when forced
    env: tuple[tuple[str, str], ...] = ()       # forcing environment (fixed per launch)
    cvars: tuple[tuple[str, str], ...] = ()     # MPI_T settings made for this point only
    readback: tuple[str, ...] = ()              # MPI_T variables reported back
    skip_reason: str = ""        # non-empty: not run, recorded as skipped
    # algorithm "tuned:NAME": the library chooses with a tuning file (campaign/tuning.py),
    # the campaign's copy (relative to the campaign directory) and its sha256
    tuning_file: str = ""
    tuning_sha256: str = ""
    # [parameters.NAME] setting of this point: (library name, value), in the spec's order;
    # already in env (and readback where MPI_T reports it)
    params: tuple[tuple[str, str], ...] = ()
    # what its calls are measured under (campaign/conditions.py): the spec's [measure]
    # or its [[case]]'s; not part of the id (a campaign measures a point one way)
    conditions: Conditions = SYNCHRONISED
    # the cvars take effect when a communicator is made: the point's calls run on a
    # duplicate of MPI_COMM_WORLD made after they are set (collkit-bench's comm=fresh;
    # Open MPI's forced algorithms, backends/openmpi.py)
    fresh_comm: bool = False

    @property
    def id(self) -> str:
        place = "inplace" if self.in_place else "outofplace"
        # A parameter setting extends the id (NAME:VALUE joined by '+'); without one the id is what it always was.
        extra = "/" + "+".join(f"{k}:{v}" for k, v in self.params) if self.params else ""
        return (f"{self.collective}/{self.backend}/{self.mpi}/{self.algorithm}/p{self.ranks}/"
                f"{self.bytes}B/{self.dtype}/{self.op}/r{self.root}/{place}{extra}")

    @property
    def label(self) -> str:
        return label(self.backend, self.mpi, self.algorithm, self.params)

    def launch_key(self) -> tuple:
        """Points with equal keys share one launch of collkit-bench."""
        return (self.mpi, self.ranks, self.env)

    def to_line(self, m: Measure) -> str:
        fields = [
            f"id={self.id}", f"collective={self.collective}", f"backend={self.backend}",
            f"algorithm={self.algorithm}", f"count={self.count}", f"dtype={self.dtype}", f"op={self.op}",
            f"root={self.root}", f"in_place={int(self.in_place)}", f"warmup={m.warmup}",
            f"min_iters={m.min_iterations}", f"max_iters={m.max_iterations}",
            f"budget_s={m.time_budget_s:g}", f"sync={m.sync}", f"validate={m.validate}",
            f"readback={','.join(self.readback)}",
        ]
        if self.cvars:
            fields.append("set=" + ",".join(f"{k}:{v}" for k, v in self.cvars))
        if self.fresh_comm:
            fields.append("comm=fresh")
        if m.launch_warmup_s is not None:
            fields.append(f"launch_warmup_s={m.launch_warmup_s:g}")
        if m.settle_s is not None:
            fields.append(f"settle_s={m.settle_s:g}")
        # program conditions keep every rank's planes (collkit-bench forces it too; the
        # line says so, so that the record's granularity says what it holds)
        granularity = "ranks" if self.conditions.program else m.granularity
        if granularity != "max":   # the default's lines stay what they were
            fields.append(f"granularity={granularity}")
        fields += self.conditions.points_fields()
        return " ".join(fields)

    def describe(self) -> dict:
        return {
            "id": self.id, "collective": self.collective, "backend": self.backend, "mpi": self.mpi,
            "algorithm": self.algorithm, "native": self.native, "ranks": self.ranks, "count": self.count,
            "bytes": self.bytes, "dtype": self.dtype, "op": self.op, "root": self.root,
            "in_place": self.in_place, "env": dict(self.env), "cvars": dict(self.cvars),
            "readback": list(self.readback),
            "skip_reason": self.skip_reason,
        } | ({"tuning_file": self.tuning_file, "tuning_sha256": self.tuning_sha256} if self.tuning_file else {}) \
          | ({"parameters": dict(self.params)} if self.params else {}) \
          | ({"conditions": self.conditions.to_json()} if self.conditions.program else {}) \
          | ({"fresh_comm": True} if self.fresh_comm else {})

    @classmethod
    def from_dict(cls, d: dict) -> "Point":
        """The inverse of describe(): a point of resolved.json."""
        return cls(collective=d["collective"], backend=d["backend"], mpi=d["mpi"], algorithm=d["algorithm"],
                   ranks=d["ranks"], count=d["count"], bytes=d["bytes"], dtype=d["dtype"], op=d["op"],
                   root=d["root"], in_place=d["in_place"], native=d.get("native", ""),
                   env=tuple(sorted(d.get("env", {}).items())), cvars=tuple(sorted(d.get("cvars", {}).items())),
                   readback=tuple(d.get("readback", ())), skip_reason=d.get("skip_reason", ""),
                   tuning_file=d.get("tuning_file", ""), tuning_sha256=d.get("tuning_sha256", ""),
                   params=tuple((k, str(v)) for k, v in (d.get("parameters") or {}).items()),
                   conditions=Conditions.from_json(d.get("conditions")),
                   fresh_comm=bool(d.get("fresh_comm", False)))


@dataclass
class Plan:
    points: list[Point] = field(default_factory=list)      # to run, in launch order
    skipped: list[Point] = field(default_factory=list)     # recorded with their reason

    def all_ids(self) -> set[str]:
        return {p.id for p in self.points} | {p.id for p in self.skipped}

    @classmethod
    def from_resolved(cls, res: dict) -> "Plan":
        """The plan a campaign's resolved.json recorded (its `points` and `skipped`)."""
        return cls(points=[Point.from_dict(d) for d in res["points"]],
                   skipped=[Point.from_dict(d) for d in res["skipped"]])
