"""A point's working time, from its per-rank arrival and exit planes.

A record with per-rank planes (granularity "ranks", and every record measured
under conditions = "program", campaign/conditions.py) holds, per iteration, each
rank's arrival and exit on one clock (docs/bench-protocol.md, "Per-rank records").
Per iteration the call's working time is program/waits.py's `call_working` (the one
definition of waiting and working: the most any rank worked once the ranks it
depends on had arrived); the summary is its median over the iterations and the 95 %
interval of that median by analysis/stats.py's rule (the one the records' times
get). Under program conditions the iteration's time (`times_us`, the slowest rank)
includes the waiting the skew caused; the working summary is what an algorithm
choice changes, and what `collkit predict` adds to the program's own waiting.

    "working": {"iterations": 200, "median_us": 2.41, "median_ci_us": [2.35, 2.52]}

(`median_ci_us` null below 6 iterations). A point measured in several launches gets
`merged()`: the median of the launches' medians, their interval, and
`launch_medians_us`. Record.from_bench stores it in every
record with planes; `of_record` reads it back, or computes it for a record stored
before it existed (from the campaign's side file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from collkit.analysis.stats import launch_interval, median_ci
from collkit.campaign import per_rank
from collkit.program.waits import call_working


def per_iteration(collective: str, root: int | None, planes: np.ndarray) -> list[float]:
    """call_working (us) of each iteration of a (3, ranks, iterations) matrix
    (planes time_us, arrival_us, exit_us)."""
    arrivals, exits = planes[1].astype(float), planes[2].astype(float)
    return [call_working(collective, root, arrivals[:, j].tolist(), exits[:, j].tolist())
            for j in range(planes.shape[2])]


def summary(collective: str, root: int | None, planes: np.ndarray) -> dict | None:
    """The record's "working" object, None for a matrix without iterations."""
    w = per_iteration(collective, root, planes)
    if not w:
        return None
    ci = median_ci(w)
    return {"iterations": len(w), "median_us": round(float(np.median(w)), 3),
            "median_ci_us": [round(ci[0], 3), round(ci[1], 3)] if ci else None}


def of_record(rec: dict, campaign_dir: Path | None = None) -> dict | None:
    """A record's working summary: the stored one, else computed from its planes
    (inline, or the campaign's side file); None for a record without planes."""
    stored = rec.get("working")
    if isinstance(stored, dict):
        return stored
    m = per_rank.matrix(rec, campaign_dir)
    if m is None or m.ndim != 3 or m.shape[0] != len(per_rank.PLANES):
        return None
    # the record's root: waits.py reads it for the rooted collectives only
    return summary(str(rec.get("collective", "")), int(rec.get("root", 0) or 0), m)


def merged(summaries: list[dict]) -> dict:
    """The working summary of a point measured in several launches (campaign/repeats.py):
    the median of the launches' medians and the interval from the launches."""
    medians = [float(w["median_us"]) for w in summaries]
    ci = launch_interval(medians)
    return {"iterations": sum(int(w.get("iterations", 0) or 0) for w in summaries),
            "median_us": round(float(np.median(medians)), 3),
            "median_ci_us": [round(ci[0], 3), round(ci[1], 3)] if ci else None,
            "launch_medians_us": medians}
