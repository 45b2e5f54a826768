"""What every launcher does for a campaign, whatever machine it reaches.

`collkit.launch.runner` drives a campaign through this protocol only; it never
asks which kind of platform it is on. A launcher is made for a platform
(`collkit.launch.launchers.launcher_for`) and

* `check_request(dry_run)`: refuses what it cannot do, before anything is written;
* `prepare_resume(campaign)`: readies a resumed campaign (Slurm: the points its
  jobs never ran are run again) and says what it did;
* `ingest_fields(campaign)`: its own fields for records that launches wrote but
  collkit never copied (`Campaign.ingest_raw`), or None;
* `run(campaign, schedule, measure, progress, dry_run)`: runs the launches of the
  schedule (launch/schedule.py: each group several times, interleaved) until each
  has its records (or, in a dry run, only writes them down);
* `metadata(campaign)`: its sections of metadata.json;
* `interrupted_notes(campaign)`, `retry_pending(campaign)`: what Ctrl-C leaves
  running, and whether records wait for a retry on resume.

A campaign directory is answered by the class that ran it
(`launchers.launched_by`): `status(campaign)` and `cancel(campaign)`, where the
platform has them (Slurm)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from collkit.campaign.platform import Platform, PlatformMPI
from collkit.campaign.points import Point
from collkit.campaign.spec import Measure
from collkit.campaign.store import Campaign
from collkit.common.errors import UserError
from collkit.common.progress import Progress
from collkit.launch.schedule import Schedule

Groups = dict[tuple, list[Point]]     # launch key -> its points, in plan order (schedule.Groups)


@dataclass(frozen=True)
class Outcome:
    """How `run` ended. `held`: the campaign stops in this state without running
    (a dry run); `notes`: lines for the user once the campaign is closed."""
    held: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchStatus:
    """What `collkit status` shows of the launcher: a table, and a summary clause."""
    table: str = ""
    summary: str = ""


class Launcher(ABC):
    """Runs a campaign's launch groups on one platform. Subclasses run one launch
    at a time (`run_group`) or override `run` to take them all at once.

    `deterministic`: its times are the same in every launch (a simulator): one round.
    `adaptive`: it can wait for a round's records before deciding the next (a batch
    script that holds every launch cannot): else only the fixed rounds run."""

    deterministic = False
    adaptive = True

    def __init__(self, platform: Platform):
        self.platform = platform

    # ---------------------------------------------------------- choosing
    @classmethod
    @abstractmethod
    def serves(cls, platform: Platform) -> bool:
        """Whether this launcher runs campaigns on `platform`."""

    @classmethod
    def ran(cls, campaign: Campaign) -> bool:
        """Whether this launcher's files are in a campaign directory."""
        return False

    # ---------------------------------------------------------- a run
    def check_request(self, dry_run: bool) -> None:
        if dry_run:
            raise UserError("--dry-run writes Slurm batch scripts: give a platform file with a [slurm] table")

    def prepare_resume(self, campaign: Campaign) -> list[str]:
        """Ready a resumed campaign; lines for the user saying what was done."""
        return []

    def ingest_fields(self, campaign: Campaign):
        """annotate(point, launch) for Campaign.ingest_raw, or None."""
        return None

    def run(self, campaign: Campaign, schedule: Schedule, measure: Measure, progress: Progress,
            dry_run: bool = False) -> Outcome:
        fixed = {(slot.key, slot.repeat) for slot in schedule.planned()}
        for slot in schedule.slots(campaign):
            if (slot.key, slot.repeat) not in fixed:
                progress.grow(slot.repeat, list(slot.points))    # an adaptive round's launch
            self.run_group(campaign, self.platform.mpi(slot.points[0].mpi), list(slot.points), measure, progress,
                           slot.repeat)
        return Outcome()

    def run_group(self, campaign: Campaign, pm: PlatformMPI, points: list[Point], measure: Measure,
                  progress: Progress, repeat: int = 0) -> None:
        """One launch of a group in round `repeat`, for launchers that keep the default
        `run`; a launcher that overrides `run` (Slurm: one allocation) never reaches this."""
        raise TypeError(f"{type(self).__name__} overrides run() and runs no single group")

    def metadata(self, campaign: Campaign) -> dict:
        """Sections this launcher adds to metadata.json."""
        return {}

    def interrupted_notes(self, campaign: Campaign) -> list[str]:
        """Lines for the user after Ctrl-C: what is still running elsewhere."""
        return []

    def retry_pending(self, campaign: Campaign) -> bool:
        """Whether records of this campaign wait to be run again on resume."""
        return False

    # ---------------------------------------------------------- a campaign directory
    @classmethod
    def status(cls, campaign: Campaign) -> LaunchStatus:
        return LaunchStatus()

    @classmethod
    def cancel(cls, campaign: Campaign) -> list[str]:
        """Stop what runs for the campaign elsewhere; the ids stopped."""
        raise UserError(f"{campaign.path} has no Slurm jobs (jobs.json); a local run stops with Ctrl-C")
