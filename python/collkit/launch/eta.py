"""How long a campaign has left, from what its points have cost so far.

A campaign's points differ in cost by orders of magnitude (8 B against 16 MiB,
4 ranks against 32 oversubscribed, one library against another), and the
launches run in plan order: one library's launches at one rank count come
first. The rate of the points done so far therefore says little about the
points left; on `make run` it once gave an ETA of 25 s with two minutes to go.

So each point left is estimated on its own, from the points done that are most
like it, in a multiplicative model: a point's cost is

    shape(collective, bytes) x kind(mpi, ranks)

where the launch *kind* is what a launch group shares apart from its forcing
environment. Both factors are fitted to the logs of the measured costs by
alternating medians (robust to the odd slow point). A rank count not
measured yet takes the nearest measured one of its library scaled by the rank
ratio: more ranks, proportionally more work per iteration (what oversubscribed
runs show; on a cluster it overestimates, which an ETA may). A library not
measured yet cannot be estimated (MPICH oversubscribed runs 2.5 times Open
MPI's time here): its points are left out of the number and the library is
named beside it until its first point is done; runner.interleaved runs every
kind's smallest launch first, so that happens within a few percent of a
campaign. A shape not measured yet is interpolated linearly in bytes between
the measured sizes of its collective, and past the largest along the slope of
the two largest; a collective measured at fewer than two sizes follows the
curve of all collectives, scaled to the one point it has.
Each launch not started yet adds the median start-up (mpirun to collkit-bench's
launch record) and end (its last record to the next launch's start: MPI_Finalize,
mpirun's exit) of its kind, else of all launches: with a hundred launches of
half a second each, they are a third of the quickstart's time.

Costs are read off the wall clock as records arrive: a point's cost is the time
from the record before it in its launch (the launch record for the first),
shared equally among the records one poll of the output reads; a launch's
start-up is from its start to its launch record. Launchers that run
launches concurrently (Slurm) do not report launches; the ETA then falls back
to the campaign's rate."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

from collkit.campaign.points import Point

ROUNDS = 6     # alternating-median sweeps: enough to settle on campaign-sized data


def _kind(p: Point) -> tuple[str, int]:
    return (p.mpi, p.ranks)


def _shape(p: Point) -> tuple[str, int]:
    return (p.collective, p.bytes)


@dataclass
class _Launch:
    points: set[tuple[str, int]]     # (id, repeat) of the points it runs
    kind: tuple[str, int] | None
    started: float
    repeat: int = 0
    up: float | None = None          # when its launch record arrived
    last: float | None = None        # when its last record arrived


@dataclass
class CampaignClock:
    """The points a campaign still has to run, each in each of its launches
    (launch/schedule.py: a point runs once per round), and what the done ones cost."""
    todo: dict[tuple[str, int], Point]                        # (id, repeat) -> point, not yet done
    groups: list[tuple[tuple[str, int], frozenset[tuple[str, int]]]]   # (kind, keys) of launches not yet started
    now: callable = time.monotonic
    costs: list[tuple[Point, float]] = field(default_factory=list)
    startups: list[tuple[tuple[str, int], float]] = field(default_factory=list)
    teardowns: list[tuple[tuple[str, int], float]] = field(default_factory=list)
    current: _Launch | None = None

    @classmethod
    def for_slots(cls, slots, done: set[tuple[str, int]], now=time.monotonic) -> "CampaignClock":
        """slots: (repeat, points) of every launch planned; done: (id, repeat) recorded."""
        clock = cls(todo={}, groups=[], now=now)
        for repeat, points in slots:
            clock.add(repeat, points, done)
        return clock

    @classmethod
    def for_groups(cls, groups: dict[tuple, list[Point]], done: set[str], now=time.monotonic) -> "CampaignClock":
        """One launch per group (a campaign of one round); done: ids recorded."""
        return cls.for_slots([(0, m) for m in groups.values() if m], {(i, 0) for i in done}, now)

    def add(self, repeat: int, points, done: set[tuple[str, int]] = frozenset()) -> None:
        """One more launch to wait for (an adaptive round's, launch/schedule.py)."""
        keys = frozenset((p.id, repeat) for p in points if (p.id, repeat) not in done)
        if not keys:
            return
        self.todo.update({(p.id, repeat): p for p in points if (p.id, repeat) in keys})
        self.groups.append((_kind(points[0]), keys))

    # -------------------------------------------------------------- events
    def launch_started(self, points: list[Point], repeat: int = 0) -> None:
        ids = {(p.id, repeat) for p in points}
        t = self.now()
        done = self.current
        if done is not None and done.last is not None and done.kind is not None:
            # the last launch's end: from its last record to this start (MPI_Finalize,
            # the launcher's exit), what a campaign of many launches pays each time
            self.teardowns.append((done.kind, t - done.last))
        kinds = {_kind(p) for p in points}
        self.current = _Launch(ids, kinds.pop() if len(kinds) == 1 else None, t, repeat)
        # the group it serves (a relaunch after a failure serves the rest of one already begun)
        self.groups = [g for g in self.groups if not (g[1] & ids)]

    def launch_up(self) -> None:
        launch = self.current
        if launch is None or launch.up is not None:
            return
        launch.up = launch.last = self.now()
        if launch.kind is not None:
            self.startups.append((launch.kind, launch.up - launch.started))

    def points_done(self, point_ids: list[str]) -> None:
        """Records read together (one poll of the launch's output): the time since
        the last record is shared among them equally."""
        launch = self.current
        repeat = launch.repeat if launch is not None else 0
        done = [self.todo.pop((i, repeat)) for i in point_ids if (i, repeat) in self.todo]
        t = self.now()
        if launch is None:
            return
        ours = [p for p in done if (p.id, repeat) in launch.points]
        if ours and launch.last is not None:
            each = max(t - launch.last, 1e-6) / len(ours)
            self.costs += [(p, each) for p in ours]
        launch.last = t

    # -------------------------------------------------------------- the estimate
    def unmeasured(self) -> list[str]:
        """Libraries with points left and none measured yet: no estimate can know
        them (another library's costs say nothing of theirs), so remaining_s
        leaves them out and the progress line names them instead."""
        measured = {p.mpi for p, _ in self.costs}
        return sorted({p.mpi for p in self.todo.values()} - measured)

    def remaining_s(self) -> float | None:
        """Seconds left for the points of the measured libraries, or None before
        the first point has a cost."""
        if not self.costs:
            return None
        shape, kind = _fit(self.costs)
        skip = set(self.unmeasured())
        left = sum(math.exp(_shape_factor(shape, _shape(p)) + _kind_factor(kind, _kind(p)))
                   for p in self.todo.values() if p.mpi not in skip)
        now = self.current
        if now is not None and now.kind is not None and now.kind[0] not in skip:
            left += self._median(self.teardowns, now.kind)
            if now.up is None:
                left += self._median(self.startups, now.kind)
        for k, _ in self.groups:
            if k[0] not in skip:
                left += self._median(self.startups, k) + self._median(self.teardowns, k)
        return left

    @staticmethod
    def _median(seen: list[tuple[tuple[str, int], float]], kind: tuple[str, int]) -> float:
        """The median of what launches of this kind took (of all launches when none has)."""
        mine = [s for k, s in seen if k == kind] or [s for _, s in seen]
        return statistics.median(mine) if mine else 0.0


def _fit(costs: list[tuple[Point, float]]) -> tuple[dict, dict]:
    """log cost = shape[collective, bytes] + kind[mpi, ranks], by alternating medians."""
    obs = [(_shape(p), _kind(p), math.log(c)) for p, c in costs]
    kind = {k: 0.0 for _, k, _ in obs}
    shape: dict = {}
    for _ in range(ROUNDS):
        by: dict = {}
        for s, k, y in obs:
            by.setdefault(s, []).append(y - kind[k])
        shape = {s: statistics.median(v) for s, v in by.items()}
        by = {}
        for s, k, y in obs:
            by.setdefault(k, []).append(y - shape[s])
        kind = {k: statistics.median(v) for k, v in by.items()}
    return shape, kind


def _kind_factor(kind: dict, k: tuple[str, int]) -> float:
    if k in kind:
        return kind[k]
    mpi, ranks = k
    same = [m for m in kind if m[0] == mpi]
    near = min(same, key=lambda m: (abs(math.log(m[1] / ranks)), m))
    return kind[near] + math.log(ranks / near[1])


def _shape_factor(shape: dict, s: tuple[str, int]) -> float:
    """log cost of a (collective, bytes) shape: fitted where measured, else linear in
    bytes between the measured sizes of its collective and past the largest along
    the slope of the two largest (a point's cost grows with its size, and the
    largest sizes, last in a launch, cost most). A collective measured at fewer
    than two sizes follows the curve of all collectives, scaled to its own point."""
    if s in shape:
        return shape[s]
    coll, nbytes = s
    every: dict[int, list[float]] = {}
    for (_, b), v in shape.items():
        every.setdefault(b, []).append(math.exp(v))
    curve = {b: statistics.median(v) for b, v in every.items()}
    mine = {b: math.exp(v) for (c, b), v in shape.items() if c == coll}
    if len(mine) >= 2 or len(curve) < 2:
        return math.log(_along(mine or curve, nbytes))
    scale = 1.0
    if mine:
        (b0, c0), = mine.items()
        scale = c0 / curve[b0]
    return math.log(scale * _along(curve, nbytes))


def _along(costs: dict[int, float], nbytes: int) -> float:
    """Cost at `nbytes` from costs at other sizes: linear between them, the
    smallest's below them, along the last two's slope (never falling) above them."""
    sizes = sorted(costs)
    if nbytes <= sizes[0]:
        return costs[sizes[0]]
    if nbytes >= sizes[-1]:
        if len(sizes) < 2:
            return costs[sizes[-1]]
        b1, b2 = sizes[-2], sizes[-1]
        return costs[b2] + max(0.0, (costs[b2] - costs[b1]) / (b2 - b1)) * (nbytes - b2)
    hi = next(b for b in sizes if b > nbytes)
    lo = max(b for b in sizes if b < nbytes)
    return costs[lo] + (costs[hi] - costs[lo]) * (nbytes - lo) / (hi - lo)
