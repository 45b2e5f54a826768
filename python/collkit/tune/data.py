"""The measurements `collkit model` and `collkit tune` read: one Measured per
(library, backend, collective, algorithm, ranks, bytes), from one or more campaigns.

Records of the same key from several campaigns (or several datatypes) are pooled:
their iterations are concatenated, and the median and its interval are the pool's."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collkit.analysis import stats
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
    times_us: np.ndarray
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


def _median_ci(sorted_t: np.ndarray) -> tuple[float, tuple[float, float] | None]:
    n = len(sorted_t)
    med = float(sorted_t[n // 2]) if n % 2 else float(0.5 * (sorted_t[n // 2 - 1] + sorted_t[n // 2]))
    ranks = stats.median_ci_ranks(n)
    return med, (None if ranks is None else (float(sorted_t[ranks[0]]), float(sorted_t[ranks[1]])))


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
            times = rec.get("times_us")
            median = (rec.get("stats_us") or {}).get("median")
            if status != "ok" or not (isinstance(times, list) and times or median is not None):
                continue
            if rec.get("unstable"):
                continue   # measured before a steady state: no model or choice rests on it

            t = times if isinstance(times, list) and times else [median]
            # A parameter setting is a variant of its algorithm, measured and chosen apart.
            params = Record.from_json(rec).params
            try:
                key = (platform, rec.get("mpi", ""), rec.get("backend", ""), rec.get("collective", ""),
                       variant(rec.get("algorithm", ""), params), int(rec.get("ranks", 0)),
                       int(rec.get("bytes", 0)))
            except (TypeError, ValueError):
                continue
            pool = pools.get(key)
            if pool is None:
                pools[key] = [t, bool(rec.get("implausible")), str(rec.get("native", "")), params]
            else:
                pool[0] = list(pool[0]) + list(t)
                pool[1] = pool[1] or bool(rec.get("implausible"))
        ran = sum(mine.values())
        if refuse_failed and (ran == 0 or mine["ok"] < MIN_OK_FRACTION * ran):
            raise UserError(f"{d}: only {mine['ok']} of {ran} points that ran are ok (the rest invalid or "
                            "failed): fix the campaign (`collkit report` lists the problems) before tuning on it")
    # all pools' iterations sorted at once (one flat array, sorted per segment)
    keys = list(pools)
    samples = stats.Samples.of([pools[k][0] for k in keys])
    flat = stats._sort_segments(samples.flat, samples.lengths)
    starts = samples.start
    points = []
    for i, key in enumerate(keys):
        _, implausible, native, params = pools[key]
        arr = flat[starts[i]:starts[i] + samples.lengths[i]]
        med, ci = _median_ci(arr)
        points.append(Measured(*key, median_us=med, ci_us=ci, times_us=arr,
                               implausible=implausible, native=native, params=params))
    points.sort(key=lambda m: (m.mpi, m.backend, m.collective, m.algorithm, m.ranks, m.bytes))
    return Campaigns(tuple(dirs), tuple(points), counts)
