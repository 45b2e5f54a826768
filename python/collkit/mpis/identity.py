"""What an MPI is: the library's own version string, and what follows from it.

The string is MPI_Get_library_version's, read by collkit-mpi-probe
(tools/mpi_probe.c), which MPI lets run before MPI_Init, so without a
launcher. From it come the default name of the MPI (``collkit build --mpi``
may give another), its family (whose algorithm forcing applies: Open MPI's
MCA variables, MPICH's CVARs, Intel MPI's I_MPI_ADJUST variables) and, with the compiler and collkit's version,
the key a build is kept under."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError

# The one list of MPI kinds collkit tells apart: (name, family, marker in the
# version string), most specific first (Cray MPICH, Intel MPI and MVAPICH also
# say "MPICH" in theirs). The family is the backend whose knobs the library
# really reads (backends/families.py has one backend per family): Intel MPI
# ignores MPICH's CVARs and has its own (I_MPI_ADJUST_<COLL>); Cray MPICH and
# MVAPICH are MPICH's, forced where MPICH's mpivars is found beside their
# launcher (their default only otherwise, with the reason).
KINDS: tuple[tuple[str, str, str], ...] = (
    ("cray-mpich", "mpich", "CRAY MPICH"),
    ("intel-mpi", "impi", "Intel(R) MPI"),
    ("mvapich", "mpich", "MVAPICH"),
    ("openmpi", "openmpi", "Open MPI"),
    ("mpich", "mpich", "MPICH"),
)
FAMILIES = tuple(dict.fromkeys(family for _, family, _ in KINDS))


def derivative(kind: str, family: str) -> bool:
    """Whether a library of `kind` is forced through another library's knobs: its family
    is named after another kind (Cray MPICH and MVAPICH read MPICH's); Intel MPI's
    family is its own."""
    return bool(family) and kind != family and any(name == family for name, _, _ in KINDS)
UNKNOWN_KIND = "mpi"

# A name reaches file names (the cache), batch scripts and spec files.
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._+-]{0,63}")


def check_name(name: str, what: str = "--mpi") -> str:
    if not NAME_RE.fullmatch(name):
        raise UserError(f"{what} {name!r} is not a valid MPI name: use 1 to 64 lower-case letters, digits, "
                        "'.', '_', '+' or '-', starting with a letter or digit (no '/' or spaces)")
    return name


def kind_of(library_version: str) -> tuple[str, str]:
    """(default name, family) for a version string; family "" when collkit
    knows no way to force the library's algorithms."""
    for name, family, marker in KINDS:
        if marker.lower() in library_version.lower():
            return name, family
    return UNKNOWN_KIND, ""


class Named:
    """What follows from a `library_version` attribute: kind, family, and the
    short form for tables (Identity and known.KnownMPI)."""

    library_version: str

    @property
    def kind(self) -> str:
        return kind_of(self.library_version)[0]

    @property
    def family(self) -> str:
        return kind_of(self.library_version)[1]

    @property
    def short(self) -> str:
        return short_version(self.library_version)


@dataclass(frozen=True)
class Identity(Named):
    library_version: str      # MPI_Get_library_version, trailing blanks removed
    mpi_version: str          # "3.1", "4.1"
    mpicc: str                # the compiler wrapper, by the path it was given
    compiler: str             # the wrapper's underlying compiler, as it names itself

    def key(self, collkit_version: str) -> str:
        """What a build depends on, hashed: the library, the compiler, collkit."""
        text = "\0".join((self.library_version, str(Path(self.mpicc).resolve()), self.compiler, collkit_version))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def short_version(library_version: str) -> str:
    """The version string's first line, blanks squeezed, for tables."""
    first = library_version.splitlines()[0] if library_version else ""
    return " ".join(first.split())


def read_probe(output: str, program: Path) -> tuple[str, str]:
    """(library_version, mpi_version) from collkit-mpi-probe's JSON line."""
    try:
        data = json.loads(output.strip().splitlines()[-1])
        return str(data["library_version"]).rstrip(), str(data["mpi_version"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise UserError(f"{program} printed no MPI identity (got {output.strip()[:200]!r})") from None


def run_probe(program: Path, env: dict[str, str] | None = None) -> tuple[str, str]:
    from collkit.common.tool import run_tool
    try:
        out = run_tool([str(program)], env=env, timeout=60)
    except UserError as exc:
        raise UserError(f"{exc}; is its MPI library on the loader's path? (module load it, or set "
                        "LD_LIBRARY_PATH)") from None
    return read_probe(out, program)


def compiler_of(mpicc: Path, env: dict[str, str] | None = None) -> str:
    """The underlying compiler's first line of --version (wrappers pass it on)."""
    try:
        proc = subprocess.run([str(mpicc), "--version"], capture_output=True, text=True, timeout=60, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip()]
    return lines[0] if proc.returncode == 0 and lines else ""
