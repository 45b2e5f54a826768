"""Platform descriptors: which MPI libraries exist here and how to launch them.

Without a file, the platform is this machine: Open MPI (``mpirun.openmpi``) and
MPICH (``.mpich``) as ``collkit.mpi`` finds them, with the collkit-bench built
for each by ``make setup``. A TOML file describes another machine:

    name = "workstation"

    [mpi.openmpi]
    mpirun = "/opt/openmpi/bin/mpirun"
    args = ["--bind-to", "core"]
    env = { OMPI_MCA_btl = "^openib" }
    bench = "/opt/collkit/openmpi/bin/collkit-bench"

Tables under ``mpi`` are keyed by library (``openmpi`` or ``mpich``)."""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from collkit.errors import UserError
from collkit.mpi import MPI_NAMES, MPIInstall, find
from collkit.paths import build_dir


@dataclass(frozen=True)
class PlatformMPI:
    install: MPIInstall
    bench: Path

    @property
    def name(self) -> str:
        return self.install.name


@dataclass(frozen=True)
class Platform:
    name: str
    source: str                                  # "detected" or the file it came from
    mpis: dict[str, PlatformMPI] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)   # library -> why it is absent

    def mpi(self, name: str) -> PlatformMPI:
        if name in self.mpis:
            return self.mpis[name]
        if name in self.missing:
            raise UserError(self.missing[name])
        hint = difflib.get_close_matches(name, list(self.mpis) + list(MPI_NAMES), n=1)
        extra = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise UserError(f"MPI '{name}' is not on platform {self.name}{extra}; "
                        f"it has: {', '.join(self.mpis) or 'none'}")


def bench_path(mpi: str) -> Path:
    return build_dir(mpi) / "bench" / "collkit-bench"


def detect() -> Platform:
    mpis: dict[str, PlatformMPI] = {}
    missing: dict[str, str] = {}
    for name in MPI_NAMES:
        try:
            install = find(name)
        except UserError as exc:
            missing[name] = str(exc)
            continue
        bench = bench_path(name)
        if not bench.exists():
            missing[name] = f"collkit-bench is not built for {name} ({bench} missing): run `make setup`"
            continue
        mpis[name] = PlatformMPI(install, bench)
    return Platform(name="this machine", source="detected", mpis=mpis, missing=missing)


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{what} must be a list of strings")
    return tuple(value)


def load(path: Path) -> Platform:
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"cannot read platform file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"platform file {path} is not valid TOML: {exc}") from None
    for key in raw:
        if key not in ("name", "mpi"):
            raise UserError(f"{path}: unknown key '{key}'; allowed: name, mpi")
    tables = raw.get("mpi", {})
    if not isinstance(tables, dict) or not tables:
        raise UserError(f"{path}: needs at least one [mpi.<library>] table")
    mpis: dict[str, PlatformMPI] = {}
    base = path.parent
    for lib, t in tables.items():
        if lib not in MPI_NAMES:
            raise UserError(f"{path}: unknown MPI library '{lib}'; choose one of {', '.join(MPI_NAMES)}")
        for key in t:
            if key not in ("mpirun", "args", "env", "bench"):
                raise UserError(f"{path}: unknown key '{key}' in [mpi.{lib}]; allowed: mpirun, args, env, bench")
        try:
            default = find(lib)
        except UserError:
            default = None
        mpirun = Path(t["mpirun"]) if "mpirun" in t else (default.mpirun if default else None)
        if mpirun is None:
            raise UserError(f"{path}: [mpi.{lib}] needs mpirun (none found on this machine)")
        env = t.get("env", dict(default.env) if default else {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise UserError(f"{path}: [mpi.{lib}] env must be a table of strings")
        args = _strings(t["args"], f"[mpi.{lib}] args") if "args" in t else (default.flags if default else ())
        bench = Path(t["bench"]) if "bench" in t else bench_path(lib)
        if not bench.is_absolute():
            bench = (base / bench).resolve()
        mpis[lib] = PlatformMPI(MPIInstall(name=lib, mpirun=mpirun, flags=args, env=dict(env)), bench)
    name = raw.get("name", path.stem)
    return Platform(name=str(name), source=str(path), mpis=mpis)
