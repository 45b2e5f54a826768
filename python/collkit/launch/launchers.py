"""The launchers, and which one serves a platform or ran a campaign.

Each launcher says itself whether it serves a platform (`Launcher.serves`) and
whether a campaign directory holds its files (`Launcher.ran`); this is the only
place that lists them."""

from __future__ import annotations

from collkit.campaign.platform import Platform
from collkit.campaign.store import Campaign
from collkit.launch.local import LocalLauncher
from collkit.launch.protocol import Launcher
from collkit.launch.simgrid import SimLauncher
from collkit.launch.slurm import SlurmLauncher

# the local launcher last: it serves whatever the others do not
LAUNCHERS: tuple[type[Launcher], ...] = (SlurmLauncher, SimLauncher, LocalLauncher)


def launcher_for(platform: Platform) -> Launcher:
    """The launcher that runs campaigns on `platform`."""
    return next(cls for cls in LAUNCHERS if cls.serves(platform))(platform)


def launched_by(campaign: Campaign) -> type[Launcher]:
    """The launcher whose files a campaign directory holds (for `status`, `cancel`)."""
    return next((cls for cls in LAUNCHERS if cls.ran(campaign)), LocalLauncher)
