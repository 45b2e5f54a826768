"""The provenance of every rule of a tuning file, as JSON beside it (FILE.provenance.json):
the formats that cannot carry comments (MPICH's JSON) need it, and the others get the
same record for tools to read."""

from __future__ import annotations

from pathlib import Path

from collkit import __version__
from collkit.campaign.record import now
from collkit.campaign.tuning import SIDECAR


def path(tuned: Path) -> Path:
    """Where the provenance of the tuning file `tuned` lives: FILE.provenance.json."""
    return tuned.with_name(tuned.name + SIDECAR)


def provenance(rules, target, models, dirs: list[Path], argv: list[str], out: Path,
               environment: dict[str, str] | None = None) -> dict:
    used = {(r.collective, r.choice) for r in rules}
    return {
        "file": out.name,
        # settings the library needs beside the file (MPICH: which collectives the file
        # takes from the device, tune/mpich_device.py); `tuned:FILE` launches apply them
        "environment": dict(environment or {}),
        "format": target.fmt,
        "library": target.library,
        "baseline": f"{target.mpi}:default",
        "written": now(),
        "collkit_version": __version__,
        "command": ["collkit", *argv],
        "campaigns": [str(d.resolve()) for d in dirs],
        "rules": [{
            "collective": r.collective, "ranks": r.ranks, "bytes_lo": r.bytes_lo, "bytes_hi": r.bytes_hi,
            "bytes_are": "one rank's block" if r.collective in ("allgather", "alltoall", "gather", "scatter",
                                                                 "reduce_scatter") else "the whole vector",
            "choice": r.choice, "source": r.source, "cutoff": r.cutoff or None,
            "expected_speedup": r.speedup, "p_value_holm": r.p_value, "measured_sizes": list(r.at_bytes),
        } for r in rules],
        "models": [{
            "collective": f.collective, "algorithm": f.algorithm, "alpha_us": f.alpha_us,
            "beta_us_per_byte": f.beta_us_per_byte, "gamma_us_per_byte": f.gamma_us_per_byte,
            "points": f.points, "median_error": f.median_error, "max_error": f.max_error,
        } for (coll, alg), f in sorted(models.items()) if (coll, alg) in used],
    }
