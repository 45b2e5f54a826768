"""SimGrid, built once per machine, and collkit's programs built with its smpicc.

collkit simulates with one SimGrid version, pinned here: 4.1, built from PyPI's
source distribution (the whole C++ source with its CMake build; PyPI has no
wheel of it that carries smpicc). Debian's 3.32 is not used: its message
completion walks a list per actor (fixed in 3.34), which made sparbit and the
linear all-to-all unsimulatable at 1,024 ranks.

The build is kept in a machine-wide cache (COLLKIT_SIMGRID_CACHE, else
$XDG_CACHE_HOME/collkit/simgrid, else ~/.cache/collkit/simgrid), keyed by the
version, the C and C++ compilers and the configure options, so every checkout
and installation of collkit on the machine shares one. smpicc and smpirun
carry their install prefix inside them, so the build installs straight into
its final directory; a stamp file written last marks it complete, and an
interrupted build (no stamp) is started over. One lock per key keeps two
builds from racing.

collkit-bench, collkit-bench-instr and collkit-replay are then compiled with
that smpicc: into the checkout's build/simgrid, or, for an installed collkit,
into the build cache (collkit.mpis.known.cache_root()), keyed by the SimGrid
build and the C sources."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.paths import build_dir, checkout_root

VERSION = "4.1"
SDIST = f"simgrid-{VERSION}.tar.gz"
SDIST_SHA256 = "23ac24cb5b2467f1f051c992ec921b4a9f8f5ac2df16c489bd01bf1c44e6e817"
# PyPI's file address (immutable once published); the hash is checked anyway
SDIST_URL = ("https://files.pythonhosted.org/packages/b8/32/"
             f"2dbaab60c222ee33371b82ec73529ab6eaf3a96edcc0b9ea55c8cb427221/{SDIST}")
PIP_DOWNLOAD = f"pip download --no-deps --no-binary :all: --no-build-isolation simgrid=={VERSION}"
SDIST_ENV = "COLLKIT_SIMGRID_SDIST"        # a local copy of the archive, for machines without internet
CACHE_ENV = "COLLKIT_SIMGRID_CACHE"
PREFIX_ENV = "COLLKIT_SIMGRID_PREFIX"     # another SimGrid, used as it is (measurements against it)
STAMP = "collkit-simgrid.json"
BENCH_STAMP = "collkit-smpi-build.json"
DOWNLOAD_TIMEOUT_S = 120
# SMPI only: no bindings, model checker, Fortran, documentation or test suites
# (none is used, and they double the build). enable_debug=OFF compiles
# SimGrid's debug logging out, which the simulations never turn on. No debug
# information: SimGrid's CMakeLists.txt appends -g3 to CMAKE_<LANG>_FLAGS, and
# the Release flags come after those on every compile line, so their -g0 wins
# (2 cores: 6:01 -> 4:59 to build, 123 MB -> 9 MB installed; docs/benchmarks.md).
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG -g0",
                 "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG -g0", "-Denable_smpi=ON", "-Denable_model-checking=OFF",
                 "-Denable_python=OFF", "-Denable_java=OFF", "-Denable_documentation=OFF",
                 "-Denable_fortran=OFF", "-Denable_lto=OFF", "-Denable_sthread=OFF", "-Denable_debug=OFF",
                 "-Denable_ns3=OFF", "-Denable_smpi_papi=OFF", "-Denable_testsuite_smpi_MPICH3=OFF",
                 "-Denable_testsuite_smpi_MBI=OFF", "-Denable_testsuite_McMini=OFF")
# Precompiled headers for libsimgrid's C++ files: parsing the same standard,
# Boost and SimGrid headers again in each of its 304 files is about three
# quarters of its build (24 sampled files: 25.2 s to compile, 19.1 s of it
# -fsyntax-only; with these headers precompiled 16.5 s; docs/benchmarks.md).
# Injected with CMAKE_PROJECT_INCLUDE, so SimGrid's source stays as PyPI ships
# it. Force-including them changes no file's meaning: every one of these
# headers is guarded, and the one file that defines a macro before its first
# #include that these headers read (xbt_misc.cpp, XBT_LOG_LOCALLY_DEFINE_XBT_CHANNEL)
# compiles without them. The headers are those most included by libsimgrid's files.
PCH_HEADERS = ("<algorithm>", "<string>", "<vector>", "<memory>", "<map>", "<unordered_map>", "<set>",
               "<functional>", "<sstream>", "<cmath>", "<numeric>", "<simgrid/s4u/Engine.hpp>",
               "<simgrid/s4u/Host.hpp>", "<simgrid/Exception.hpp>", '"src/kernel/EngineImpl.hpp"',
               '"src/kernel/actor/ActorImpl.hpp"', '"src/kernel/activity/CommImpl.hpp"',
               '"src/kernel/resource/NetworkModel.hpp"', '"src/smpi/include/private.hpp"',
               '"src/smpi/include/smpi_actor.hpp"')
PCH_SKIP = ("src/xbt/xbt_misc.cpp",)
SMPI_TARGETS = ("collkit-bench", "collkit-bench-instr", "collkit-replay")


def _pch_header() -> str:
    return "".join(f"#include {h}\n" for h in PCH_HEADERS)


def _pch_cmake(header: Path) -> str:
    """What SimGrid's configure runs after its project(): `header` precompiled for libsimgrid's C++ files."""
    skip = " ".join(f'"${{CMAKE_SOURCE_DIR}}/{f}"' for f in PCH_SKIP)
    return ("# Written by collkit (simgrid_install.py): precompiled headers for libsimgrid.\n"
            "function(collkit_simgrid_pch)\n"
            f'  target_precompile_headers(simgrid PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:{header}>")\n'
            f"  set_source_files_properties({skip} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)\n"
            "endfunction()\n"
            'cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL collkit_simgrid_pch)\n')


def say(msg: str) -> None:
    print(f"[collkit simgrid] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class SimGrid:
    prefix: Path
    version: str

    @property
    def smpicc(self) -> Path:
        return self.prefix / "bin" / "smpicc"

    @property
    def smpirun(self) -> Path:
        return self.prefix / "bin" / "smpirun"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().absolute()
    from collkit.mpis.known import user_cache
    return user_cache() / "collkit" / "simgrid"


def _first_line(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    return out.splitlines()[0].strip() if out.strip() else "unknown"


def _compilers() -> tuple[str, str]:
    cc = os.environ.get("CC") or "cc"
    cxx = os.environ.get("CXX") or "c++"
    return cc, cxx


@functools.lru_cache(maxsize=None)
def build_key() -> str:
    """Version, compilers (their --version) and options: what makes two builds differ."""
    cc, cxx = _compilers()
    h = hashlib.sha256("\0".join([VERSION, SDIST_SHA256, cc, _first_line([cc, "--version"]), cxx,
                                  _first_line([cxx, "--version"]), *CMAKE_OPTIONS, _pch_header(), *PCH_SKIP]).encode())
    return h.hexdigest()[:12]


def prefix() -> Path:
    return cache_dir() / f"simgrid-{VERSION}-{build_key()}"


def _given() -> SimGrid | None:
    """COLLKIT_SIMGRID_PREFIX: a SimGrid installed elsewhere, used as it is
    (for measurements against another version; collkit is tested with VERSION)."""
    env = os.environ.get(PREFIX_ENV)
    if not env:
        return None
    pre = Path(env).expanduser().absolute()
    if not (pre / "bin" / "smpirun").is_file() or not (pre / "bin" / "smpicc").is_file():
        raise UserError(f"{PREFIX_ENV}={env}: no bin/smpirun and bin/smpicc there; unset it to use "
                        f"collkit's own SimGrid {VERSION}")
    reported = _first_line([str(pre / "bin" / "smpirun"), "--version"])
    return SimGrid(pre, reported.replace("SimGrid version", "").strip() or "unknown")


def installed() -> SimGrid | None:
    """The cache's complete build for this machine's compilers, if any."""
    given = _given()
    if given is not None:
        return given
    pre = prefix()
    try:
        stamp = json.loads((pre / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("version") != VERSION or not (pre / "bin" / "smpirun").is_file():
        return None
    return SimGrid(pre, VERSION)


def _writable(root: Path) -> Path:
    try:
        (root / "locks").mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-")
        probe.close()
    except OSError as exc:
        raise UserError(f"the SimGrid cache {root} is not writable ({exc.strerror or exc}): set "
                        f"{CACHE_ENV} to a directory you can write") from None
    return root


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _sdist(root: Path) -> Path:
    """The archive, checked against its pinned hash: the user's copy
    (COLLKIT_SIMGRID_SDIST), else the cache's, else downloaded from PyPI."""
    given = os.environ.get(SDIST_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise UserError(f"{SDIST_ENV}={given}: no such file; point it at {SDIST} "
                            f"({PIP_DOWNLOAD})")
        if _sha256(path) != SDIST_SHA256:
            raise UserError(f"{SDIST_ENV}={given}: not PyPI's {SDIST} (its SHA-256 differs from "
                            f"{SDIST_SHA256}); download it again")
        return path
    path = root / SDIST
    if path.is_file() and _sha256(path) == SDIST_SHA256:
        return path
    say(f"downloading {SDIST_URL}")
    # imported here: urllib.request brings ssl and http.client, 15 ms of every
    # collkit start that never downloads (this module is imported by the campaign code)
    import urllib.error
    import urllib.request
    tmp = root / f".{SDIST}.{os.getpid()}"
    try:
        with urllib.request.urlopen(SDIST_URL, timeout=DOWNLOAD_TIMEOUT_S) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
    except (OSError, urllib.error.URLError) as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot download SimGrid {VERSION} ({exc}): get {SDIST} another way (`{PIP_DOWNLOAD}`, "
                        f"through your pip mirror, or on a machine with internet) and set {SDIST_ENV} to its "
                        "path") from None
    if _sha256(tmp) != SDIST_SHA256:
        tmp.unlink(missing_ok=True)
        raise UserError(f"the download of {SDIST_URL} does not have the pinned SHA-256 {SDIST_SHA256}: "
                        f"set {SDIST_ENV} to a good copy")
    os.replace(tmp, path)
    return path


def _extract(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    src = into / f"simgrid-{VERSION}"
    if not (src / "CMakeLists.txt").is_file():
        raise UserError(f"{archive} does not hold simgrid-{VERSION}/CMakeLists.txt: not SimGrid's sdist")
    return src


def ensure(progress: bool = True) -> SimGrid:
    """SimGrid VERSION from the cache, built first if this machine has none."""
    found = installed()
    if found is not None:
        return found
    from collkit.mpis.build import _run_logged, find_cmake, locked
    root = _writable(cache_dir())
    key = build_key()
    with locked(root, f"simgrid-{VERSION}-{key}") as lock:
        found = installed()          # built by another process while we waited
        if found is not None:
            return found
        pre = prefix()
        shutil.rmtree(pre, ignore_errors=True)          # an interrupted build's leftovers
        archive = _sdist(root)
        log = root / f"simgrid-{VERSION}-{key}.log"
        log.write_text("")
        cmake = find_cmake()
        jobs = str(max(1, min(os.cpu_count() or 1, 16)))
        say(f"building SimGrid {VERSION} into {pre} (once per machine; about 3 minutes on 2 cores; log: {log})")
        with tempfile.TemporaryDirectory(dir=root, prefix=f".build-{key}-") as tmp:
            src = _extract(archive, Path(tmp))
            build = Path(tmp) / "build"
            header = Path(tmp) / "collkit_pch.hxx"
            header.write_text(_pch_header())
            pch = Path(tmp) / "collkit_pch.cmake"
            pch.write_text(_pch_cmake(header))
            cc, cxx = _compilers()
            _run_logged([cmake, "-S", str(src), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={pre}",
                         f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}", *CMAKE_OPTIONS,
                         f"-DCMAKE_PROJECT_INCLUDE={pch}"],
                        log, "configuring SimGrid (needs a C++17 compiler and Boost: apt-get install "
                        "libboost-dev, or module load boost)", lock=lock, cwd=build.parent)
            _run_logged([cmake, "--build", str(build), "-j", jobs], log, "building SimGrid",
                        progress=progress, lock=lock)
            _run_logged([cmake, "--install", str(build)], log, "installing SimGrid", lock=lock)
        sim = SimGrid(pre, VERSION)
        reported = _first_line([str(sim.smpirun), "--version"])
        if VERSION not in reported:
            raise UserError(f"the SimGrid built in {pre} reports '{reported}', not {VERSION}; its log: {log}")
        atomic.write_text(pre / STAMP, json.dumps({"version": VERSION, "sdist_sha256": SDIST_SHA256,
                                                   "compilers": list(_compilers()), "options": list(CMAKE_OPTIONS),
                                                   "precompiled_headers": list(PCH_HEADERS)},
                                                  indent=1) + "\n")
        say(f"SimGrid {VERSION} is ready: {sim.smpirun}")
        return sim


def smpirun() -> Path:
    """The simulator's launcher (without building): where a SimGrid build is or would be."""
    found = installed()
    return found.smpirun if found is not None else prefix() / "bin" / "smpirun"


# ----------------------------------------------------------------------------
# collkit's programs for SimGrid


def programs_dir() -> Path:
    """Where collkit-bench for SimGrid is: the checkout's build/simgrid
    (COLLKIT_BUILD_ROOT moves it), else the installed collkit's build cache."""
    if checkout_root() is not None or os.environ.get("COLLKIT_BUILD_ROOT"):
        return build_dir("simgrid")
    from collkit.mpis import known
    from collkit.mpis.build import source_dir, source_fingerprint
    given = _given()
    simgrid = hashlib.sha256(str(given.prefix).encode()).hexdigest()[:12] if given else f"{VERSION}-{build_key()}"
    return known.cache_root() / "builds" / f"smpi-{simgrid}-{source_fingerprint(source_dir())}"


def _bench_stamp(sim: SimGrid) -> dict:
    from collkit.mpis.build import source_dir, source_fingerprint
    return {"smpicc": str(sim.smpicc), "sources": source_fingerprint(source_dir())}


def _configured_compiler(tree: Path) -> str | None:
    """The C compiler a CMake tree was configured with (None: not configured)."""
    try:
        text = (tree / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("CMAKE_C_COMPILER:"):
            return line.split("=", 1)[1]
    return ""


def programs_ready(sim: SimGrid | None = None) -> bool:
    sim = sim or installed()
    try:
        out = programs_dir()
        if sim is None or not (out / "bench" / "collkit-bench").is_file():
            return False
        return json.loads((out / BENCH_STAMP).read_text()) == _bench_stamp(sim)
    except (OSError, ValueError, UserError):     # UserError: an installation without C sources
        return False


def ensure_programs(progress: bool = True) -> Path:
    """SimGrid, then collkit-bench, collkit-bench-instr and collkit-replay
    compiled with its smpicc, rebuilt when the C sources or SimGrid change.
    Returns their build directory."""
    sim = ensure(progress)
    out = programs_dir()
    if os.environ.get("COLLKIT_BUILD_ROOT") and (out / "bench" / "collkit-bench").is_file():
        return out     # a tree picked by hand (a measurement against an older build): used as it is
    if programs_ready(sim):
        return out
    from collkit.mpis.build import _run_logged, find_cmake, locked, source_dir
    out.parent.mkdir(parents=True, exist_ok=True)
    root = _writable(cache_dir())
    with locked(root, "smpi-programs-" + hashlib.sha256(str(out).encode()).hexdigest()[:12]) as lock:
        if programs_ready(sim):
            return out
        if _configured_compiler(out) not in (None, str(sim.smpicc)):
            # configured with another smpicc (Debian's 3.32, or another cache): start over
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)
        log = out / "collkit-smpi-build.log"
        log.write_text("")
        cmake = find_cmake()
        if progress:
            say(f"compiling collkit-bench and collkit-replay with SimGrid {VERSION}'s smpicc into {out}")
        _run_logged([cmake, "-S", str(source_dir()), "-B", str(out), f"-DCMAKE_C_COMPILER={sim.smpicc}",
                     f"-DMPI_C_COMPILER={sim.smpicc}", "-DCOLLKIT_BUILD_TESTS=OFF",
                     f"-DCOLLKIT_WERROR={'ON' if checkout_root() is not None else 'OFF'}"],
                    log, "configuring collkit for SimGrid", lock=lock)
        _run_logged([cmake, "--build", str(out), "-j", str(max(1, min(os.cpu_count() or 1, 16))),
                     "--target", *SMPI_TARGETS], log, "compiling collkit for SimGrid", lock=lock)
        atomic.write_text(out / BENCH_STAMP, json.dumps(_bench_stamp(sim)) + "\n")
    return out
