"""A point measured in several launches: one record per launch, one record per point.

A launch (an `mpirun`, a Slurm job step) draws a machine state that lasts the whole
launch (issue #54: the same allreduce measured 170 or 760 us a call depending on the
launch, steady inside each). So a campaign runs every launch group several times
(launch/schedule.py), and records.jsonl holds one record per point and launch, its
`repeat` field saying which (0, 1, ...; records written before the field existed are
repeat 0). Which record stands for a (point, repeat) is record.py's rule (the first,
or the re-measure of an unstable one); `merge` turns a point's standing records into
the one record every reader sees (`record.current`):

* status: `invalid` if any launch found a wrong result (the invalid record stands);
  else `ok` if any launch measured it (launches that failed are listed in
  `launch_failures`); else the first record (failed or skipped);
* the timed launches kept: the steady ones (an unstable launch is left out while
  another launch is steady; the point is unstable only if every launch is);
* `stats_us.median`: the median of the kept launches' medians, the point's estimate;
  `launch_medians_us`, `launch_numbers`, `launch_iterations`: one entry per kept
  launch; `launch_times_us`: their iterations (kept apart: a test pools iterations
  only inside a launch, analysis/launches.py); `times_us` is left out, so that no
  reader pools iterations of different launches by mistake;
* `iterations`: their sum; min and max over all; algbw and busbw scaled to the median;
* `implausible` (below the launch's one-message floor): when most kept launches were;
* `working` (per-rank planes): the median of the launches' working medians;
* everything else (readback, per-rank summaries and matrix, instrumentation) is the
  first kept launch's, as records of one launch always were.

A point with one standing record is that record unchanged: simulated campaigns (one
launch, deterministic) and campaigns made before repetition read exactly as before."""

from __future__ import annotations

import statistics

from collkit.campaign import working as working_mod

TIMED = ("ok", "invalid")


def repeat_of(rec: dict) -> int:
    """The repetition a record belongs to (0 for records made before the field)."""
    try:
        return int(rec.get("repeat", 0) or 0)
    except (TypeError, ValueError):
        return 0


def _timed(rec: dict) -> bool:
    return rec.get("status") in TIMED and int(rec.get("iterations", 0) or 0) > 0


def _median(rec: dict) -> float | None:
    stats = rec.get("stats_us")
    value = stats.get("median") if isinstance(stats, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def final(recs: list[dict]) -> bool:
    """Whether a point's standing records end its repetition: a launch found it invalid,
    or it failed in a launch and no launch measured it (a point the library refuses
    or that hangs is not launched again and again), or it was skipped."""
    if any(r.get("status") in ("invalid", "skipped") for r in recs):
        return True
    return any(r.get("status") == "failed" for r in recs) and not any(_timed(r) for r in recs)


def merge(recs: list[dict]) -> dict:
    """The record that stands for a point, from its standing records in repeat order."""
    if len(recs) == 1:
        return recs[0]
    invalid = [r for r in recs if r.get("status") == "invalid"]
    timed = [r for r in recs if _timed(r) and r.get("status") == "ok" and _median(r) is not None]
    if invalid:
        return invalid[0] | {"launch_numbers": [r.get("launch") for r in recs], "repeats": len(recs)}
    if not timed:
        return recs[0] | {"repeats": len(recs)}
    steady = [r for r in timed if not r.get("unstable")]
    kept = steady or timed
    base = kept[0]
    medians = [_median(r) for r in kept]
    estimate = statistics.median(medians)
    out = dict(base)
    out.pop("times_us", None)
    stats = dict(base.get("stats_us") or {})
    stats.pop("median_ci", None)          # an interval of one launch's iterations: not the point's
    mins = [r["stats_us"].get("min") for r in kept if isinstance(r["stats_us"].get("min"), (int, float))]
    maxs = [r["stats_us"].get("max") for r in kept if isinstance(r["stats_us"].get("max"), (int, float))]
    for key in ("p5", "p95", "mean"):
        vals = [r["stats_us"].get(key) for r in kept if isinstance(r["stats_us"].get(key), (int, float))]
        if vals:
            stats[key] = statistics.median(vals)
    stats.update(median=estimate, **({"min": min(mins)} if mins else {}), **({"max": max(maxs)} if maxs else {}))
    out["stats_us"] = stats
    out["iterations"] = sum(int(r.get("iterations", 0) or 0) for r in kept)
    out["launch_medians_us"] = medians
    out["launch_numbers"] = [r.get("launch") for r in kept]
    out["launch_iterations"] = [int(r.get("iterations", 0) or 0) for r in kept]
    times = [r.get("times_us") for r in kept]
    if all(isinstance(t, list) and t for t in times):
        out["launch_times_us"] = times
    out["repeats"] = len(recs)
    base_median = _median(base)
    if base_median and estimate:
        scale = base_median / estimate       # bandwidths are bytes over the median time
        for key in ("algbw_GBps", "busbw_GBps"):
            if isinstance(base.get(key), (int, float)):
                out[key] = base[key] * scale
    # steady launches stand; the point is unstable only if none is
    out["unstable"] = "" if steady else base.get("unstable", "")
    # the estimate is below the floor when most launches were (one launch's odd state is not)
    flagged = [r.get("implausible") for r in kept if r.get("implausible")]
    out["implausible"] = flagged[0] if 2 * len(flagged) > len(kept) else ""
    failures = [{"launch": r.get("launch"), "repeat": repeat_of(r), "reason": r.get("reason", "")}
                for r in recs if r.get("status") == "failed"]
    if failures:
        out["launch_failures"] = failures
    works = [r.get("working") for r in kept]
    if all(isinstance(w, dict) and isinstance(w.get("median_us"), (int, float)) for w in works):
        out["working"] = working_mod.merged([w for w in works if isinstance(w, dict)])
    return out
