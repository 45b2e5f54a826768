"""One writer per tuning-file format: openmpi.py (classic rules file, version 1),
mpich.py (JSON selection file), impi.py (Intel MPI's I_MPI_ADJUST settings), impi_json.py
(Intel MPI's own JSON tree, I_MPI_TUNING), collkit.py (the collkit rules format of docs/preload.md),
sidecar.py (the provenance of every rule, for all formats).

The writers of the libraries' own formats share one interface, which `collkit tune`
calls without asking which library it writes for: FORMAT (the format's name, as the
library's backend gives it: backends/protocol.py), library_state(install) (what the
writer needs from the installed library), expressible(collective, candidate, state),
variant_fits(collective, params), ownership(points, candidates),
write_file(rules, candidates, state, header) and caveats(rules, candidates) (what the written file
does that the user would not expect, one line each, printed by `collkit tune`)."""

from __future__ import annotations

from types import ModuleType

from collkit.tune.writers import impi, impi_json, mpich, openmpi

LIBRARY_WRITERS: tuple[ModuleType, ...] = (openmpi, mpich, impi, impi_json)


def for_format(fmt: str) -> ModuleType | None:
    """The writer of a library's format, or None (collkit's own rules: writers/collkit.py)."""
    return next((w for w in LIBRARY_WRITERS if w.FORMAT == fmt), None)
