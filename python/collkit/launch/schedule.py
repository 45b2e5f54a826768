"""Which launch runs next: every launch group several times, interleaved.

A launch (an `mpirun`, a Slurm job step) draws a machine state that lasts the whole
launch: process placement, pages, the neighbours on the cores. On this machine the
same allreduce measured 22 to 25 us a call from launch to launch, steady inside
each; elsewhere 170 or 760 us (issue #54). Iterations inside one launch cannot see
that, so a campaign repeats launches (ReproMPI's lesson, docs/bench-protocol.md):

* every launch group runs `[measure] launches` times (3 by default), in rounds: each
  round runs every group once, in an order drawn from `launch_seed` and the round,
  so that a slow period of the machine falls on all groups alike rather than on
  the ones planned last;
* then, up to `max_launches`, rounds of the points whose interval from their
  launches (analysis/stats.launch_interval) is still wider than
  `launch_tolerance` of their estimate, in a new order each round;
* inside a launch the points run in plan order (the algorithms of one collective,
  size and rank count next to each other, campaign/plan.py), reversed in every
  other round, so that no algorithm always runs before the others of its cell;
* a point that is invalid in a launch, or failed and was measured in none, is not
  launched again (campaign/repeats.final); a point measured before a steady state
  is measured again inside its round (launch/watch.py);
* simulated platforms run one round (their times are deterministic), and so do
  launchers that cannot wait for a round's results before the next (Slurm, whose
  batch script holds every round: `adaptive` False).

The order depends only on the seed, the round and the groups, so `--resume` walks
the same schedule and runs what has no record yet."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Iterator

from collkit.analysis.stats import launch_interval
from collkit.campaign import repeats
from collkit.campaign.points import Point
from collkit.campaign.record import Record
from collkit.campaign.spec import Measure
from collkit.campaign.store import Campaign

Groups = dict[tuple, list[Point]]     # launch key -> its points, in plan order


@dataclass(frozen=True)
class Slot:
    """One launch of a group: its round (the records' `repeat`) and the points to run."""
    key: tuple
    repeat: int
    points: tuple[Point, ...]


class Schedule:
    def __init__(self, groups: Groups, measure: Measure, simulated: bool = False, adaptive: bool = True):
        self.groups = groups
        self.measure = measure
        self.rounds = 1 if simulated else measure.launches
        self.max_rounds = 1 if simulated else (measure.max_launches if adaptive else measure.launches)
        self.simulated = simulated

    # ------------------------------------------------------------ order
    def order(self, repeat: int, keys: list[tuple]) -> list[tuple]:
        """The groups of a round in a seeded random order (plan order in round 0 of a
        campaign of one round: nothing to interleave)."""
        if self.max_rounds == 1:
            return list(keys)
        ranked = sorted(keys, key=list(self.groups).index)
        random.Random(f"collkit-launch-order:{self.measure.launch_seed}:{repeat}").shuffle(ranked)
        return ranked

    def points_of(self, key: tuple, repeat: int) -> list[Point]:
        """A group's points in the order of this round: plan order, reversed in odd rounds."""
        pts = self.groups[key]
        return list(reversed(pts)) if repeat % 2 else list(pts)

    def todo(self, campaign: Campaign, key: tuple, repeat: int, only: set[str] | None = None) -> list[Point]:
        """Points of a group without a record of this round (or with a re-measure owed),
        and not finished in an earlier one."""
        done = campaign.recorded_in(repeat) - campaign.remeasure_ids(repeat)
        finished = campaign.finished_ids() - campaign.recorded_in(repeat)
        return [p for p in self.points_of(key, repeat)
                if p.id not in done and p.id not in finished and (only is None or p.id in only)]

    # ------------------------------------------------------------ the launches
    def planned(self) -> list[Slot]:
        """The fixed rounds, every point in each (the ETA's and a batch script's list)."""
        return [Slot(key, r, tuple(self.points_of(key, r)))
                for r in range(self.rounds) for key in self.order(r, list(self.groups))]

    def slots(self, campaign: Campaign) -> Iterator[Slot]:
        """The launches still to run, in order; the adaptive rounds are decided from the
        records as the earlier rounds leave them."""
        for r in range(self.rounds):
            for key in self.order(r, list(self.groups)):
                todo = self.todo(campaign, key, r)
                if todo:
                    yield Slot(key, r, tuple(todo))
        for r in range(self.rounds, self.max_rounds):
            wide = self.wide(campaign, r)
            if not wide:
                return
            for key in self.order(r, [k for k in self.groups if any(p.id in wide for p in self.groups[k])]):
                todo = self.todo(campaign, key, r, wide)
                if todo:
                    yield Slot(key, r, tuple(todo))

    def unfinished(self, campaign: Campaign) -> int:
        """Points of the fixed rounds still without a record of their round."""
        return sum(len(self.todo(campaign, key, r)) for r in range(self.rounds) for key in self.groups)

    def wide(self, campaign: Campaign, repeat: int) -> set[str]:
        """Ids of the points that round `repeat` measures again: those measured ok in
        every earlier round whose launch interval is wider than the tolerance, and
        those this round measured already (a resumed round goes on)."""
        planned = {p.id for pts in self.groups.values() for p in pts}
        out = set(campaign.recorded_in(repeat)) & planned
        for pid, recs in campaign.point_records().items():
            if pid not in planned or repeats.final(recs) or len(recs) < repeat:
                continue
            merged = Record.from_json(repeats.merge(recs))
            if merged.status != "ok":
                continue
            if too_wide(merged.launch_medians, self.measure.launch_tolerance):
                out.add(pid)
        return out


def too_wide(medians: list[float], tolerance: float) -> bool:
    """Whether an estimate from these launch medians is still uncertain: no interval
    yet (fewer than 2 launches), or its half width above `tolerance` of the median."""
    ci = launch_interval(medians)
    if ci is None:
        return True
    estimate = statistics.median(medians)
    return estimate <= 0 or (ci[1] - ci[0]) / 2 > tolerance * estimate
