"""The registry of known MPIs: the package's own build and the build cache.

``find(name)`` is how every command turns an MPI name into something it can
launch and the programs built for it. Nothing here compiles or launches; the
MPI's identity is read from each build's manifest, recorded when it was made."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from collkit.common.errors import UserError, did_you_mean
from collkit.common.paths import checkout_root, package_root
from collkit.mpis.identity import Identity, Named, check_name, kind_of
from collkit.mpis.install import LAUNCH_DEFAULTS, Build, MPIInstall

REGISTRATION_FORMAT = 1
BUILD_HINT = "collkit build --mpi NAME --mpicc PATH (or --prefix DIR)"


def cache_root() -> Path:
    """Where `collkit build` keeps builds: COLLKIT_CACHE (a project directory on
    a shared filesystem, for Slurm), else the checkout's build/collkit-cache
    when collkit runs from its source checkout (`make setup`'s builds, removed
    by `make clean`), else $XDG_CACHE_HOME/collkit, else ~/.cache/collkit."""
    env = os.environ.get("COLLKIT_CACHE")
    if env:
        return Path(env).expanduser().absolute()
    checkout = checkout_root()
    if checkout is not None:
        return checkout / "build" / "collkit-cache"
    return user_cache() / "collkit"


def user_cache() -> Path:
    """The user's cache directory: $XDG_CACHE_HOME when absolute (as the XDG spec
    asks), else ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"


def registrations_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / "mpis"


def package_build_dir() -> Path:
    """Where pip install put the package's own build."""
    return package_root() / "native"


@dataclass(frozen=True)
class KnownMPI(Named):
    name: str
    origin: str                 # "package" or the registration file
    mpicc: str
    mpirun: str                 # "" when none was found: local launches need one
    library_version: str
    build: Build | None         # None: unusable, see `problem`
    problem: str = ""

    def identity(self) -> Identity:
        b = self.build
        return Identity(self.library_version, b.mpi_version if b else "", self.mpicc,
                        b.text("c_compiler") if b else "")

    def usable(self) -> Build:
        if self.build is None:
            raise UserError(f"MPI '{self.name}' ({self.origin}) cannot be used: {self.problem}")
        return self.build

    def part(self, name: str) -> Path:
        path = self.usable().part(name)
        if not path.exists():
            raise UserError(f"{path} is missing from MPI '{self.name}''s build: rebuild it "
                            f"(collkit build --mpi {self.name} ...)")
        return path

    def install(self) -> MPIInstall:
        """How to launch this MPI on this machine."""
        if not self.mpirun:
            raise UserError(f"MPI '{self.name}' has no mpirun/mpiexec beside {self.mpicc}: give one with "
                            f"collkit build --mpi {self.name} --mpicc {self.mpicc} --mpirun PATH")
        flags, env = LAUNCH_DEFAULTS.get(self.kind, ((), {}))
        return MPIInstall(name=self.name, mpirun=Path(self.mpirun), flags=flags, env=dict(env),
                          family=self.family, kind=self.kind)


def _from_package() -> KnownMPI | None:
    prefix = package_build_dir()
    if not (prefix / "collkit-build.json").exists():
        return None
    try:
        build = Build.read(prefix)
    except UserError as exc:
        return KnownMPI(name="package", origin=str(prefix), mpicc="", mpirun="", library_version="",
                        build=None, problem=str(exc))
    name = kind_of(build.library_version)[0]
    return KnownMPI(name=name, origin="package", mpicc=build.text("mpicc"), mpirun=build.text("mpirun"),
                    library_version=build.library_version, build=build)


def read_registration(path: Path) -> KnownMPI:
    """One registration of the cache; a broken one is known but unusable."""
    name = path.stem
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != REGISTRATION_FORMAT:
            raise ValueError("unknown format")
        prefix = Path(data["prefix"])
        mpicc, mpirun, version = str(data["mpicc"]), str(data.get("mpirun", "")), str(data["library_version"])
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        return KnownMPI(name=name, origin=str(path), mpicc="", mpirun="", library_version="", build=None,
                        problem=f"its registration {path} is damaged ({exc}): build it again with "
                                f"collkit build --mpi {name} ...")
    try:
        build = Build.read(prefix)
    except UserError as exc:
        return KnownMPI(name=name, origin=str(path), mpicc=mpicc, mpirun=mpirun, library_version=version,
                        build=None, problem=f"{exc}: build it again with collkit build --mpi {name} --mpicc {mpicc}")
    return KnownMPI(name=name, origin=str(path), mpicc=mpicc, mpirun=mpirun, library_version=version, build=build)


def _from_cache() -> list[KnownMPI]:
    folder = registrations_dir()
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return []
    return [read_registration(f) for f in files if f.is_file()]


@lru_cache(maxsize=4)
def _known(_stamp: tuple) -> dict[str, KnownMPI]:
    found: dict[str, KnownMPI] = {}
    pkg = _from_package()
    if pkg is not None:
        found[pkg.name] = pkg
    for k in _from_cache():
        # A registration under the package build's name is the same MPI
        # (collkit build refuses two under one name); the cache's is the newer.
        found[k.name] = k
    return found


def _stamp() -> tuple:
    """Changes whenever a registration is added, replaced or removed."""
    root = registrations_dir()
    try:
        entries = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in root.glob("*.json")))
    except OSError:
        entries = ()
    return (str(root), str(package_build_dir()), entries)


def known() -> dict[str, KnownMPI]:
    """Every known MPI by name, the usable and the broken."""
    return dict(_known(_stamp()))


def names() -> list[str]:
    return sorted(known())


def find(name: str) -> KnownMPI:
    """A known MPI by name, or one line naming the known ones and the fix."""
    check_name(name)
    found = known()
    if name in found:
        return found[name]
    have = ", ".join(sorted(found)) or "none"
    raise UserError(f"no MPI named '{name}' is known here{did_you_mean(name, found)} (known: {have}); "
                    f"add it with {BUILD_HINT}, then see `collkit mpis`")


def find_install(name: str) -> MPIInstall:
    return find(name).install()


def any_build(part: str) -> Path:
    """A program every build has alike (the tracer, the registry): the first
    usable build's, by name."""
    for name, k in sorted(known().items()):
        if k.build is not None and k.build.has(part):
            return k.build.part(part)
    raise UserError(f"no collkit build is known here, so there is no {part}: {BUILD_HINT} "
                    "(pip install builds one against the mpicc on PATH)")


def clear() -> None:
    _known.cache_clear()


def find_family(family: str) -> KnownMPI:
    """The known MPI a tuning file of this family's format is for: the one
    named like the family, else the only one of that family."""
    found = known()
    if family in found and found[family].family == family:
        return found[family]
    of_family = [k for k in found.values() if k.family == family]
    if len(of_family) == 1:
        return of_family[0]
    if not of_family:
        raise UserError(f"no known MPI is of the {family} family: add one with {BUILD_HINT}")
    raise UserError(f"several known MPIs are of the {family} family ({', '.join(sorted(k.name for k in of_family))}) "
                    f"and none is named '{family}': build the one to use under that name "
                    f"(collkit build --mpi {family} --mpicc PATH)")


def default_name() -> str:
    """The MPI a command uses when none is named: the only one known, else the
    one named openmpi; otherwise the user must choose."""
    found = known()
    if len(found) == 1:
        return next(iter(found))
    if "openmpi" in found:
        return "openmpi"
    if not found:
        raise UserError(f"no MPI is known here: add one with {BUILD_HINT}")
    raise UserError(f"several MPIs are known here ({', '.join(sorted(found))}): choose one with --mpi NAME")
