"""Launch collkit-bench with this machine's mpirun, and watch it.

One launch runs many points. collkit-bench writes a record per point as it
finishes; the watchdog (collkit.launch.watch) copies each into the campaign at
once and restarts the per-point clock. A point that produces nothing within its
timeout is a hang: the whole launch (its process group) is killed, the point is
recorded `failed` with the tail of stderr, and a new launch takes the remaining
points. A crash is handled the same way, with the exit status as the reason."""

from __future__ import annotations

from collkit.campaign.platform import Platform, PlatformMPI
from collkit.campaign.points import Point
from collkit.campaign.spec import Measure
from collkit.campaign.store import Campaign
from collkit.common.progress import Progress
from collkit.launch import mpi_failure, watch
from collkit.launch.components import Components
from collkit.launch.protocol import Launcher, Outcome
from collkit.launch.schedule import Schedule


class LocalLauncher(Launcher):
    """mpirun here, one launch group after the other."""

    def __init__(self, platform: Platform):
        super().__init__(platform)
        self._components = Components()

    @classmethod
    def serves(cls, platform: Platform) -> bool:
        return platform.slurm is None and platform.simgrid is None

    def run(self, campaign: Campaign, schedule: Schedule, measure: Measure, progress: Progress,
            dry_run: bool = False) -> Outcome:
        # Every group's components are asked before the first launch: asked between two
        # launches, the probe's launch would count as the earlier one's end in the ETA
        # (launch/eta.py's teardowns), and every later launch would be expected to pay it.
        for slot in schedule.planned():
            self._components.annotate(self.platform.mpi(slot.points[0].mpi), slot.points[0])
        return super().run(campaign, schedule, measure, progress, dry_run)

    def run_group(self, campaign: Campaign, pm: PlatformMPI, points: list[Point], measure: Measure,
                  progress: Progress, repeat: int = 0) -> None:
        def start(remaining: list[Point]) -> watch.Launch:
            files = watch.launch_files(campaign, remaining, measure, repeat)
            env = pm.install.environment()
            env.update(dict(remaining[0].env))
            cmd = pm.install.launch(remaining[0].ranks, pm.bench,
                                    ["--points", str(files.points), "--out", str(files.out)])
            return watch.Launch(files.number, watch.start(cmd, env, log=files.err), files.out, files.err)

        # a group shares its rank count and environment (launch/schedule.py)
        annotate = self._components.annotate(pm, points[0]) if points else None
        watch.run_group(campaign, pm.name, points, measure, progress, start, diagnose=mpi_failure.diagnose,
                        annotate=annotate, repeat=repeat)
