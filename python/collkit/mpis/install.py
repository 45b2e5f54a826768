"""How to launch an MPI, and where a build of collkit's programs is.

:class:`MPIInstall` is what a launch needs (launcher, its flags, environment,
and the family whose forcing applies); :class:`Build` is an install prefix
with its manifest, collkit-build.json (cmake/CollkitManifest.cmake), which
names each program by its path in the prefix."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from collkit.common.errors import UserError

MANIFEST = "collkit-build.json"
MANIFEST_FORMAT = 1
# What collkit launches or reads from a build; `bench_instr` and `bench_nccl`
# exist where their options were on.
PARTS = ("bench", "matrix", "matrix_library", "trace", "probe", "rules", "preload", "registry")

# How this kind of machine launches each MPI: more ranks than cores is the
# rule here (tests, laptops), and root runs CI. MPICH's progress engine spins
# unless throttled; with more ranks than cores that costs three orders of
# magnitude (docs/benchmarks.md). Derivatives (Intel MPI, Cray MPICH, ...)
# get nothing: their launchers take other flags.
LAUNCH_DEFAULTS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "openmpi": (("--oversubscribe",), {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
    "mpich": ((), {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
                   "MPIR_CVAR_POLLS_BEFORE_YIELD": "1"}),
}


@dataclass(frozen=True)
class MPIInstall:
    name: str
    mpirun: Path
    flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    # "openmpi" or "mpich": whose algorithm forcing applies (collkit.backends);
    # "" for an MPI collkit can only run with its default algorithms.
    family: str = ""
    # What the library says it is ("openmpi", "mpich", "intel-mpi", ...): a
    # derivative (kind != family) whose family tool fails offers its default only.
    kind: str = ""

    def __post_init__(self) -> None:
        # An MPI known by nothing but its name (a platform file's [mpi.openmpi]
        # on a cluster) is of the family it is named after.
        if not self.family and self.name in LAUNCH_DEFAULTS:
            object.__setattr__(self, "family", self.name)
        if not self.kind:
            object.__setattr__(self, "kind", self.family)

    def launch(self, ranks: int, program: Path, args: list[str]) -> list[str]:
        return [str(self.mpirun), "-n", str(ranks), *self.flags, str(program), *args]

    def environment(self) -> dict[str, str]:
        merged = dict(os.environ)
        merged.update(self.env)
        return merged




@dataclass(frozen=True)
class Build:
    """An install prefix of collkit's C parts for one MPI."""

    prefix: Path
    manifest: dict

    @classmethod
    def read(cls, prefix: Path) -> "Build":
        """The build at prefix; UserError naming what is wrong with it."""
        path = prefix / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{prefix} holds no finished collkit build ({MANIFEST} missing)") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UserError(f"cannot read {path}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT \
                or not isinstance(data.get("parts"), dict) or not isinstance(data.get("mpi"), dict):
            raise UserError(f"{path} is not a collkit build manifest of format {MANIFEST_FORMAT}; rebuild it "
                            "(collkit build, or pip install again)")
        return cls(prefix=prefix, manifest=data)

    def part(self, name: str) -> Path:
        rel = self.manifest["parts"].get(name)
        if not isinstance(rel, str) or not rel:
            raise UserError(f"the collkit build in {self.prefix} has no {name} (built without it)")
        return self.prefix / rel

    def has(self, name: str) -> bool:
        rel = self.manifest["parts"].get(name)
        return isinstance(rel, str) and bool(rel) and (self.prefix / rel).exists()

    def missing_parts(self) -> list[str]:
        return [p for p in PARTS if not self.has(p)]

    @property
    def library_version(self) -> str:
        return str(self.manifest["mpi"].get("library_version", "")).rstrip()

    @property
    def mpi_version(self) -> str:
        return str(self.manifest["mpi"].get("mpi_version", ""))

    def text(self, key: str) -> str:
        value = self.manifest.get(key, "")
        return value if isinstance(value, str) else ""
