"""`collkit build`: collkit's C parts for one more MPI, into the build cache.

A build is kept under its key (library version string, compiler, collkit's
version: identity.Identity.key), in ``builds/NAME-KEY/prefix``, and counts
only once its registration ``mpis/NAME.json`` points at it, written after the
install finished and the MPI's programs were seen to start. A build that was
interrupted (kill -9) or failed leaves no registration and no manifest, and
the next build of that key starts it over. One lock per name keeps two
builds of one MPI from racing."""

from __future__ import annotations

import errno
import hashlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from collkit import __version__
from collkit.common import atomic
from collkit.common.errors import UserError
from collkit.common.paths import checkout_root, package_root
from collkit.mpis import known
from collkit.mpis.identity import Identity, check_name, compiler_of, kind_of, run_probe
from collkit.mpis.install import LAUNCH_DEFAULTS, MANIFEST, Build

CMAKE_MIN = (3, 25)
START_TIMEOUT_S = 120.0
PROBE_EXE = "collkit-mpi-probe"   # tools/mpi_probe.c as probe_identity compiles it


def say(msg: str) -> None:
    print(f"[collkit build] {msg}", file=sys.stderr, flush=True)


def source_dir() -> Path:
    """The C sources: the checkout's, else the copy the package carries."""
    root = checkout_root()
    if root is not None:
        return root
    src = package_root() / "native" / "src"
    if (src / "CMakeLists.txt").is_file():
        return src
    raise UserError(f"this collkit has no C sources to build ({src} is missing): install it again "
                    "(pip install collkit-VERSION.tar.gz)")


SOURCE_DIRS = ("bench", "cmake", "include", "lib", "preload", "tests", "tools", "validate")


def source_fingerprint(src: Path) -> str:
    """A hash of the C sources and CMake files: a checkout's sources change
    without collkit's version changing, and a build must follow them."""
    h = hashlib.sha256()
    files = [src / "CMakeLists.txt"]
    for d in SOURCE_DIRS:
        files += [f for f in (src / d).rglob("*") if f.is_file() and "python" not in f.relative_to(src).parts
                  and f.suffix in (".c", ".h", ".txt", ".cmake", ".in", ".f", ".f90")]
    for f in sorted(files):
        h.update(str(f.relative_to(src)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def find_cmake(env: dict[str, str] | None = None) -> str:
    """cmake >= 3.25: on PATH (env's, when given), else the `cmake` package from PyPI."""
    candidates = [shutil.which("cmake", path=(env if env is not None else os.environ).get("PATH"))]
    try:
        import cmake as cmake_pkg  # type: ignore[import-not-found]
    except ImportError:
        cmake_pkg = None
    # Only PyPI's package has CMAKE_BIN_DIR (a folder named cmake/ in the
    # working directory imports as a namespace package).
    bindir = getattr(cmake_pkg, "CMAKE_BIN_DIR", None)
    if bindir:
        candidates.append(str(Path(bindir) / "cmake"))
    seen = []
    for c in candidates:
        if not c:
            continue
        try:
            out = subprocess.run([c, "--version"], capture_output=True, text=True, timeout=30, env=env).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        m = re.search(r"version (\d+)\.(\d+)", out)
        if m and (int(m.group(1)), int(m.group(2))) >= CMAKE_MIN:
            return c
        seen.append(f"{c} ({m.group(0) if m else 'unknown version'})")
    found = f" (found {', '.join(seen)})" if seen else ""
    raise UserError(f"collkit build needs CMake >= {CMAKE_MIN[0]}.{CMAKE_MIN[1]}{found}: "
                    "pip install cmake, or module load a newer cmake")


def resolve_mpicc(mpicc: str | None, prefix: str | None, path: str | None = None) -> Path:
    if (mpicc is None) == (prefix is None):
        raise UserError("collkit build needs exactly one of --mpicc PATH and --prefix DIR")
    if prefix is not None:
        cand = Path(prefix).expanduser() / "bin" / "mpicc"
        if not (cand.is_file() and os.access(cand, os.X_OK)):
            raise UserError(f"--prefix {prefix}: no executable bin/mpicc there; give the MPI's install prefix "
                            "(the directory holding bin/mpicc) or --mpicc PATH")
        return cand.absolute()
    assert mpicc is not None
    found = shutil.which(mpicc, path=path) if os.sep not in mpicc else mpicc
    if not found or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise UserError(f"--mpicc {mpicc}: not an executable program; give the path of the MPI's C compiler "
                        "wrapper (e.g. --mpicc $(which mpicc))")
    return Path(found).absolute()


def resolve_mpirun(mpirun: str | None, path: str | None = None) -> Path | None:
    if mpirun is None:
        return None
    found = shutil.which(mpirun, path=path) if os.sep not in mpirun else mpirun
    if not found or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise UserError(f"--mpirun {mpirun}: not an executable program; give the MPI's launcher "
                        "(mpirun or mpiexec of the same MPI)")
    return Path(found).absolute()


def writable_cache(root: Path) -> Path:
    try:
        for sub in ("mpis", "builds", "locks"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root / "locks", prefix=".w", delete=True)
        probe.close()
    except OSError as exc:
        raise UserError(f"the build cache {root} is not writable ({exc.strerror or exc}): set COLLKIT_CACHE "
                        "to a directory you can write (on a cluster: one the compute nodes also see)") from None
    return root


def probe_identity(mpicc: Path, work: Path, env: dict[str, str] | None = None) -> Identity:
    """Compile tools/mpi_probe.c alone with the wrapper and run it: proves the
    wrapper builds MPI programs and says which MPI it is, before any build."""
    src = source_dir() / "tools" / "mpi_probe.c"
    exe = work / PROBE_EXE
    try:
        proc = subprocess.run([str(mpicc), "-o", str(exe), str(src)], capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        raise UserError(f"{mpicc} did not compile a one-file MPI program within 300 s") from None
    except OSError as exc:
        raise UserError(f"cannot run {mpicc}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        why = next((ln for ln in lines if "mpi.h" in ln), lines[-1] if lines else "no output")
        raise UserError(f"--mpicc {mpicc} cannot build an MPI program ({why}): give an MPI compiler wrapper "
                        "such as mpicc, not a plain C compiler")
    version, mpi_version = run_probe(exe, env)
    # The wrapper by the name it was given: Open MPI's mpicc is a link to
    # opal_wrapper, which acts on the name it is called by.
    return Identity(library_version=version, mpi_version=mpi_version, mpicc=str(mpicc),
                    compiler=compiler_of(mpicc, env))


def default_mpirun(mpicc: Path) -> Path | None:
    """The launcher of the wrapper's MPI: beside it, with its suffix (Debian's
    mpicc.openmpi has mpirun.openmpi); the same rule as cmake/CollkitPackage.cmake."""
    suffix = mpicc.name[len("mpicc"):] if mpicc.name.startswith("mpicc") else ""
    for name in dict.fromkeys((f"mpiexec{suffix}", f"mpirun{suffix}", "mpiexec", "mpirun")):
        cand = mpicc.parent / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def check_start(probe: Path, mpirun: Path, kind: str, base_env: dict[str, str] | None = None) -> None:
    """Two ranks of the probe program (tools/mpi_probe.c) through MPI_Init and a barrier."""
    flags, env_extra = LAUNCH_DEFAULTS.get(kind, ((), {}))
    env = dict(base_env if base_env is not None else os.environ)
    env.update(env_extra)
    argv = [str(mpirun), "-n", "2", *flags, str(probe), "--init"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=START_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"an MPI program does not start with {mpirun} (2 ranks, no answer in "
                        f"{START_TIMEOUT_S:g} s): check the MPI works here (mpirun -n 2 hostname), "
                        "or give its launcher with --mpirun") from None
    except OSError as exc:
        raise UserError(f"cannot run {mpirun}: {exc.strerror or exc}") from None
    if proc.returncode != 0 or "started 2 ranks" not in proc.stdout:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else "no output"
        raise UserError(f"an MPI program does not start with {mpirun} (exit status {proc.returncode}: {last}): "
                        "check the MPI works here (mpirun -n 2 hostname), or give its launcher with --mpirun")


@contextmanager
def locked(root: Path, name: str):
    path = root / "locks" / f"{name}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            say(f"another build of '{name}' is running; waiting for it ({path})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _run_logged(argv: list[str], log: Path, what: str, progress: bool = False,
                env: dict[str, str] | None = None, lock: int | None = None, cwd: Path | None = None) -> None:
    """Run a build step, its output into the log; one line on failure. The
    step inherits the lock's descriptor: a flock lasts while any process holds
    it, so if collkit alone is killed (kill -9) the lock stays taken until
    cmake and its compilers are done writing the tree."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL, env=env, pass_fds=(lock,) if lock is not None else (),
                                cwd=cwd)
        shown = -10
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            m = re.match(r"\[\s*(\d+)%\]", line)
            if progress and m and int(m.group(1)) >= shown + 10:
                shown = int(m.group(1))
                say(f"compiling: {shown}%")
        rc = proc.wait()
    if rc != 0:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
        errs = [ln.strip() for ln in text if "error" in ln.lower() and ln.strip()]
        why = errs[0] if errs else (text[-1].strip() if text else "no output")
        raise UserError(f"{what} failed ({why[:300]}); the whole log: {log}")


@dataclass(frozen=True)
class Result:
    name: str
    prefix: Path
    built: bool        # False: an up-to-date build was there already


def _same_mpi(k: known.KnownMPI, ident: Identity) -> bool:
    return (k.library_version.rstrip() == ident.library_version
            and Path(k.mpicc).resolve() == Path(ident.mpicc).resolve()) if k.mpicc else False


def wrapper_env(mpicc: Path, env: dict[str, str] | None) -> dict[str, str] | None:
    """The environment Intel MPI's wrappers need: they find the library through
    I_MPI_ROOT, which its module or env/vars.sh sets and a wheel installed with pip
    does not (its mpigcc then looks in a placeholder directory and finds no mpi.h).
    Told by Intel's own tool beside the wrapper; an I_MPI_ROOT already set is kept."""
    base = env if env is not None else os.environ
    if "I_MPI_ROOT" in base or not (mpicc.parent / "impi_info").is_file():
        return env
    return {**base, "I_MPI_ROOT": str(mpicc.absolute().parent.parent)}


def build(name: str | None, mpicc_arg: str | None, prefix_arg: str | None, mpirun_arg: str | None,
          replace: bool = False, jobs: int | None = None, env: dict[str, str] | None = None,
          nccl: bool = False) -> Result:
    """`env`: the environment the MPI's programs (wrapper, CMake, probe, launcher) run in, e.g. after
    a Slurm platform's module lines (collkit.mpis.remote); None: this process's. `nccl`: also
    collkit-bench-nccl (docs/gpu.md), a build of its own key."""
    search = (env if env is not None else os.environ).get("PATH")
    mpicc = resolve_mpicc(mpicc_arg, prefix_arg, search)
    mpirun = resolve_mpirun(mpirun_arg, search)
    env = wrapper_env(mpicc, env)
    if name is not None:
        check_name(name)
    root = writable_cache(known.cache_root())
    cmake = find_cmake(env)
    if mpirun is None:
        mpirun = default_mpirun(mpicc)
    with tempfile.TemporaryDirectory(prefix="probe-", dir=root / "builds") as tmp:
        say(f"asking {mpicc} which MPI it builds for")
        ident = probe_identity(mpicc, Path(tmp), env)
        kind, family = kind_of(ident.library_version)
        name = name or kind
        say(f"{name}: {ident.short} ({'forcing: ' + family if family else 'no algorithm forcing known'})")
        # The launcher is tried with the one-file probe before anything is compiled:
        # a launcher that cannot start programs fails in seconds, not after the build.
        if mpirun is not None:
            say(f"checking that MPI programs start ({mpirun} -n 2)")
            check_start(Path(tmp) / PROBE_EXE, mpirun, kind, env)
    key = ident.key(f"{__version__} {source_fingerprint(source_dir())}{' nccl' if nccl else ''}")

    with locked(root, name) as lock:
        known.clear()
        existing = known.known().get(name)
        if existing is not None and existing.mpicc and not replace \
                and Path(existing.mpicc).resolve() != Path(ident.mpicc).resolve():
            raise UserError(f"an MPI named '{name}' is known already, built with {existing.mpicc} "
                            f"({existing.short}), not {ident.mpicc}: choose another name with --mpi, "
                            "or --replace to make the name point at this one")
        if existing is not None and existing.origin == "package" and _same_mpi(existing, ident) \
                and (not nccl or (existing.build is not None and existing.build.has("bench_nccl"))):
            say(f"'{name}' is the MPI this collkit was installed with; its build is up to date")
            return Result(name, existing.build.prefix if existing.build else Path(), built=False)
        reg = known.registrations_dir(root) / f"{name}.json"
        dest = root / "builds" / f"{name}-{key}"
        prefix = dest / "prefix"
        if existing is not None and existing.build is not None and existing.build.prefix == prefix \
                and not existing.build.missing_parts() and existing.mpirun == str(mpirun or ""):
            say(f"'{name}' is up to date ({prefix})")
            return Result(name, prefix, built=False)
        if dest.exists():
            # Unfinished (killed, failed) or unregistered: start over.
            shutil.rmtree(dest)
        tree = dest / "tree"
        tree.mkdir(parents=True)
        log = dest / "build.log"
        args = [cmake, "-S", str(source_dir()), "-B", str(tree), f"-DCOLLKIT_MPICC={mpicc}",
                "-DCMAKE_BUILD_TYPE=Release", "-DCOLLKIT_BUILD_TESTS=OFF", f"-DCMAKE_INSTALL_PREFIX={prefix}",
                f"-DCOLLKIT_NCCL={'ON' if nccl else 'OFF'}"]
        if mpirun is not None:
            args.append(f"-DMPIEXEC_EXECUTABLE={mpirun}")
        started = time.monotonic()
        say(f"configuring in {tree}")
        _run_logged(args, log, "configuring with CMake", env=env, lock=lock)
        jobs = jobs or os.cpu_count() or 1
        say(f"compiling with {jobs} jobs (log: {log})")
        _run_logged([cmake, "--build", str(tree), "-j", str(jobs)], log, "compiling", progress=True, env=env,
                    lock=lock)
        say(f"installing into {prefix}")
        _run_logged([cmake, "--install", str(tree)], log, "installing", env=env, lock=lock)
        made = Build.read(prefix)
        if made.library_version != ident.library_version:
            raise UserError(f"the build in {prefix} reports another MPI ({made.library_version.splitlines()[0]}) "
                            f"than {mpicc} did ({ident.short}): is another MPI's library first on "
                            "LD_LIBRARY_PATH?")
        run = Path(made.text("mpirun")) if made.text("mpirun") else None
        if run is None:
            say(f"no mpirun or mpiexec beside {mpicc}: not checking that programs start; local launches need "
                "--mpirun (Slurm platforms launch with srun)")
        else:
            say(f"checking that its programs start ({run} -n 2)")
            check_start(made.part("probe"), run, kind, env)
        atomic.write_json(reg, {
            "format": known.REGISTRATION_FORMAT, "name": name, "prefix": str(prefix), "key": key,
            "mpicc": ident.mpicc, "mpirun": str(run or ""), "library_version": ident.library_version,
            "mpi_version": ident.mpi_version, "compiler": ident.compiler, "kind": kind, "family": family,
            "collkit_version": __version__, "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "build_seconds": round(time.monotonic() - started, 1)})
        # The build tree is only needed to build; the prefix is what runs.
        shutil.rmtree(tree, ignore_errors=True)
        known.clear()
        say(f"'{name}' is ready: {prefix} ({time.monotonic() - started:.0f} s)")
        return Result(name, prefix, built=True)

