"""The programs of the known MPIs' builds (collkit.mpis.known) that tests run
(their markers: needs.py)."""

from pathlib import Path

from collkit.common.errors import UserError
from collkit.mpis import known


def built(mpi: str, part: str) -> Path | None:
    """The part of MPI `mpi`'s build, or None where it is not known or built."""
    k = known.known().get(mpi)
    if k is None or k.build is None or not k.build.has(part):
        return None
    return k.build.part(part)


def ck_trace() -> Path | None:
    try:
        return known.any_build("trace")
    except UserError:
        return None


def cache_with(root: Path, broken: tuple[str, ...] = (), keep: tuple[str, ...] = ("openmpi",)) -> Path:
    """A build cache for COLLKIT_CACHE holding copies of this machine's
    registrations of `keep`, and for each name in `broken` one whose build is
    gone: known, but unusable."""
    import json
    regs = root / "mpis"
    regs.mkdir(parents=True, exist_ok=True)
    for name in keep:
        k = known.known().get(name)
        if k is not None and k.origin != "package":
            (regs / f"{name}.json").write_text(Path(k.origin).read_text())
    for name in broken:
        (regs / f"{name}.json").write_text(json.dumps({
            "format": known.REGISTRATION_FORMAT, "name": name, "prefix": str(root / "gone"),
            "mpicc": "/nonexistent/mpicc", "mpirun": "/nonexistent/mpirun", "library_version": "MPICH Version: 0"}))
    return root
