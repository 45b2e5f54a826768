"""The measurements `collkit model` and `collkit tune` read: one Measured per
(library, backend, collective, algorithm, ranks, bytes), from one or more campaigns.

A point is measured in launches (campaign/repeats.py), and launches are the samples:
records of the same key from several campaigns are pooled launch by launch (a launch
is its campaign and number; records of one launch, several datatypes, pool their
iterations into that launch's median). The estimate is the median of the launch
medians, its interval the launches' (analysis/stats.launch_interval; from one launch,
its iterations'), and `timing` is what comparisons read (analysis/launches.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.analysis import launches, stats
from collkit.campaign.points import variant
from collkit.campaign.record import Record, current
from collkit.common.errors import UserError

# A campaign whose recorded points are mostly not ok says more about the machine
# than about the algorithms: tune refuses it.
MIN_OK_FRACTION = 0.5


@dataclass(frozen=True)
class Measured:
    platform: str
    mpi: str
    backend: str          # "mpi" | "collkit"
    collective: str
    algorithm: str        # canonical name, "default", "tuned:FILE", or a variant ("binomial[segmentsize=8192]")
    ranks: int
    bytes: int
    median_us: float
    ci_us: tuple[float, float] | None
    timing: launches.Timing
    implausible: bool
    native: str
    # the [parameters.NAME] setting of a variant (campaign/points.variant), () for none
    params: tuple[tuple[str, str], ...] = ()

    @property
    def sigma_us(self) -> float:
        """The median's standard error, from its 95 % interval (half width / 1.96), at
        least 2 % of the median (timer and clock noise no interval shows), 10 % without one."""
        if self.ci_us is None:
            return 0.1 * self.median_us
        return max((self.ci_us[1] - self.ci_us[0]) / (2 * 1.96), 0.05 * self.median_us)


@dataclass(frozen=True)
class Campaigns:
    dirs: tuple[Path, ...]
    points: tuple[Measured, ...]
    counts: dict[str, int]        # status -> records, over all campaigns


def _platform(path: Path) -> str:
    try:
        data = json.loads((path / "resolved.json").read_text())
        return str((data.get("platform") or {}).get("name") or "local")
    except (OSError, ValueError, AttributeError):
        return "local"


def _check_dir(path: Path) -> None:
    if not path.is_dir() or not (path / "spec.toml").is_file() or not (path / "resolved.json").is_file():
        raise UserError(f"{path} is not a collkit campaign (no spec.toml / resolved.json); give a directory "
                        "that `collkit run` made")


def _read_records(path: Path) -> list[dict]:
    """records.jsonl as JSON objects, the record that stands for each id (record.current(),
    as campaign/store.py reads it, without touching the directory: tune may read
    campaigns it does not own)."""
    out: list[dict] = []
    f = path / "records.jsonl"
    if not f.is_file():
        return []
    with open(f) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue   # a line cut short by a crash: the campaign's own readers skip it too
            out.append(rec)
    return list(current(out).values())


def _pool_launches(pool: dict[tuple[str, int], list], simulated: bool) -> tuple[float, tuple | None, launches.Timing]:
    """pool: launch -> [iterations, medians of its records]: the estimate, its interval
    and the Timing."""
    keys = sorted(pool)
    medians, times = [], []
    for k in keys:
        its, meds = pool[k]
        medians.append(float(np.median(its)) if its else float(np.median(meds)))
        times.append(tuple(float(v) for v in its))
    timing = launches.Timing(tuple(keys), tuple(medians), tuple(times), simulated)
    if len(keys) > 1:
        return timing.estimate, stats.launch_interval(medians), timing
    one = np.sort(np.asarray(times[0], float)) if times[0] else np.asarray(medians, float)
    ranks = stats.median_ci_ranks(len(one))
    return medians[0], (None if ranks is None else (float(one[ranks[0]]), float(one[ranks[1]]))), timing


def load(dirs: list[Path], refuse_failed: bool = True) -> Campaigns:
    counts = {"ok": 0, "invalid": 0, "failed": 0, "skipped": 0}
    pools: dict[tuple, list] = {}
    for d in dirs:
        _check_dir(d)
        platform = _platform(d)
        recs = _read_records(d)
        mine = {"ok": 0, "invalid": 0, "failed": 0}
        for rec in recs:
            status = rec.get("status", "")
            counts[status] = counts.get(status, 0) + 1
            if status in mine:
                mine[status] += 1
            r = Record.from_json(rec)
            if status != "ok" or not r.timed:
                continue
            if r.unstable:
                continue   # measured before a steady state: no model or choice rests on it
            # A parameter setting is a variant of its algorithm, measured and chosen apart.
            try:
                key = (platform, r.mpi, r.backend, r.collective, variant(r.algorithm, r.params), r.ranks, r.bytes)
            except (TypeError, ValueError):
                continue
            pool = pools.setdefault(key, [{}, False, r.native, r.params, r.simulated])
            for number, median, times in zip(r.launch_numbers, r.launch_medians, r.launch_times):
                slot = pool[0].setdefault((str(d), number), [[], []])
                slot[0].extend(times)
                slot[1].append(median)
            pool[1] = pool[1] or bool(r.implausible)
        ran = sum(mine.values())
        if refuse_failed and (ran == 0 or mine["ok"] < MIN_OK_FRACTION * ran):
            raise UserError(f"{d}: only {mine['ok']} of {ran} points that ran are ok (the rest invalid or "
                            "failed): fix the campaign (`collkit report` lists the problems) before tuning on it")
    points = []
    for key, (by_launch, implausible, native, params, simulated) in pools.items():
        med, ci, timing = _pool_launches(by_launch, simulated)
        points.append(Measured(*key, median_us=med, ci_us=ci, timing=timing,
                               implausible=implausible, native=native, params=params))
    points.sort(key=lambda m: (m.mpi, m.backend, m.collective, m.algorithm, m.ranks, m.bytes))
    return Campaigns(tuple(dirs), tuple(points), counts)
