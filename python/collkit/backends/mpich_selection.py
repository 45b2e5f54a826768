"""The format of MPICH's JSON collective selection file
(`MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`, src/mpi/coll/src/csel.c;
docs/tuning-files.md): nested keys tried in order, every top-level key a
`collective=NAME`. campaign/tuning.py tells a file's library by its content and
checks its top level here."""

from __future__ import annotations

from collkit.common.errors import UserError


def structure(doc: object, where: str) -> tuple[str, ...] | None:
    """The collectives of an MPICH selection file, or None when doc is not one."""
    if not isinstance(doc, dict) or not doc or not all(isinstance(k, str) for k in doc):
        return None
    if not all(k.startswith("collective=") for k in doc):
        bad = next(k for k in doc if not k.startswith("collective="))
        raise UserError(f"{where}: top-level key '{bad}' is not 'collective=NAME'; MPICH aborts on it "
                        "(every top-level key of a selection file names a collective)")
    return tuple(k.split("=", 1)[1] for k in doc)
