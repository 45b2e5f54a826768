"""The SimGrid the tests simulate with: collkit's own build of the pinned
version (collkit.simulation.simgrid_install), never whatever smpicc is on PATH.
`make setup-tests` builds it; tests that need it carry needs.simgrid (or
needs.simgrid_programs for collkit's programs built with it)."""

from collkit.simulation import simgrid_install

_SIM = simgrid_install.installed()
SMPICC = str(_SIM.smpicc) if _SIM else None
SMPIRUN = str(_SIM.smpirun) if _SIM else None
