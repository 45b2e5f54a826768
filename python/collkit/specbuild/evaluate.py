"""A spec text judged exactly as `collkit run` judges it: the spec loader, then
the planner on the platform. The point count is the plan's own (no second
count); the time estimate comes from the measurement settings (below)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collkit.campaign import plan as planner
from collkit.campaign import spec as specs
from collkit.campaign.platform import Platform
from collkit.common.errors import UserError
from collkit.library import registry


@dataclass(frozen=True)
class Evaluation:
    error: str = ""          # the loader's or the planner's one-line refusal; "" when the spec is accepted
    points: int = 0          # points the plan runs
    skipped: int = 0         # points it records as skipped, with their reason
    launches: int = 0        # launches of collkit-bench (points sharing MPI, rank count, forcing share one)
    estimate_s: float = 0.0  # see estimate()

    @property
    def ok(self) -> bool:
        return not self.error

    def summary(self) -> str:
        if self.error:
            return self.error
        return (f"{_count(self.points, 'point')} to run, {self.skipped} skipped, "
                f"{_count(self.launches, 'launch')}, about {_duration(self.estimate_s)} measuring")


def estimate(m: specs.Measure, points: int, launches: int) -> float:
    """Seconds of measurement: each point iterates until its timed iterations add
    up to time_budget_s (bench/run_point.c) after at most settle_s of warm-up
    windows, and each launch first warms up for launch_warmup_s. A key left
    unset (collkit-bench's default applies), MPI start-up, validation and points
    whose min_iterations outlast the budget are not counted: a lower bound for
    slow points, an upper one where max_iterations stops a point early. On a
    simulated platform these are simulated seconds, not the host's."""
    per_point = m.time_budget_s + (m.settle_s or 0.0)
    return points * per_point + launches * (m.launch_warmup_s or 0.0)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}es" if what.endswith("ch") else f"{n} {what}s"


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.3g} min"
    return f"{s / 3600:.3g} h"


def evaluate(text: str, platform: Platform, out: Path) -> Evaluation:
    """`text` as if it were the file `out`: its tuned:FILE entries relative to out's
    directory, its messages prefixed with out's name as `collkit run` prefixes them."""
    source = str(out)
    try:
        spec = specs.parse(text, source=source, default_name=out.stem, spec_dir=out.resolve().parent)
        plan = planner.build(spec, platform, registry.load())
    except UserError as exc:
        msg = str(exc)
        return Evaluation(error=msg if msg.startswith(source) else f"{source}: {msg}")
    if not plan.points and not plan.skipped:
        return Evaluation(error=f"{source}: the spec selects no test point")
    launches = len({p.launch_key() for p in plan.points})
    return Evaluation(points=len(plan.points), skipped=len(plan.skipped), launches=launches,
                      estimate_s=estimate(spec.measure, len(plan.points), launches))
