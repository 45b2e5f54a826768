"""What a launch's output says when MPI itself did not start.

collkit-bench cannot report a failed MPI_Init (nothing of MPI works yet), so
the launch ends with the library's banner and a bare exit status. The lines
that name the failure are picked out here, so that a failed point's reason says
"MPI_Init failed" and why, not only "exited with status 1" (the banner stays
in the record's stderr_tail).

    diagnose(stderr_path) -> str | None
"""

from __future__ import annotations

import re
from pathlib import Path

# Open MPI: "*** An error occurred in MPI_Init"; MPICH and Intel MPI:
# "Fatal error in PMPI_Init: Other MPI error, error stack:" (also _thread).
_INIT = re.compile(r"(An error occurred in|Fatal error in) P?MPI_Init")
# Open MPI's help text names the failed step and its code on two lines:
#   "  mca_bml_base_open() failed" / "  --> Returned "Not found" (-13) instead of "Success" (0)"
_RETURNED = re.compile(r"^\s*-->\s*Returned\s+(.*?)\s+instead of")
_MPICH = re.compile(r"Fatal error in P?MPI_Init\w*:\s*(.*)")
MAX_CHARS = 300


def diagnose(stderr: Path) -> str | None:
    """'MPI_Init failed: WHAT' when the launch's output shows a failed MPI_Init,
    else None."""
    try:
        lines = stderr.read_text(errors="replace").splitlines()
    except OSError:
        return None
    if not any(_INIT.search(line) for line in lines):
        return None
    for i, line in enumerate(lines):
        returned = _RETURNED.match(line)
        if returned and i > 0 and lines[i - 1].strip():
            return f"MPI_Init failed: {lines[i - 1].strip()} returned {returned.group(1)}"[:MAX_CHARS]
    for line in lines:
        mpich = _MPICH.search(line)
        if mpich:
            return f"MPI_Init failed: {mpich.group(1).strip().rstrip(',:')}"[:MAX_CHARS]
    return "MPI_Init failed"
