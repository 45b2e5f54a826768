"""An MPI of a Slurm platform, built on the login node from its module lines.

A platform file's ``[mpi.NAME]`` may give, instead of the path of collkit-bench,
the shell lines that make the MPI usable (``modules``: ``module load
openmpi/4.1.6``) and/or its compiler wrapper (``mpicc``). Before a campaign
uses that MPI, collkit runs the platform's ``[slurm] setup`` lines and then
those lines in bash, as the batch script will, reads the environment they
leave, finds the wrapper in it and builds collkit's C parts with it into the
build cache under NAME (collkit.mpis.build: once; later campaigns find the
build up to date). The batch scripts run the same lines and then the build's
collkit-bench, which the compute nodes must therefore see: a cache on a
node-local filesystem gets a warning here, and the script itself stops with a
clear line when collkit-bench is not there (collkit.launch.slurm)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from collkit.common.errors import UserError
from collkit.common.safe import control_character
from collkit.mpis import build as builder
from collkit.mpis import known

# Filesystems that live on one machine: a build there is invisible to the
# compute nodes (unless the login node is one, as in the tests). Network and
# parallel filesystems (nfs, lustre, gpfs, beegfs, ceph, ...) are not listed;
# an unknown type gets no warning, since collkit cannot tell.
NODE_LOCAL_FS = frozenset({
    "tmpfs", "ramfs", "devtmpfs", "overlay", "aufs", "squashfs", "ext2", "ext3", "ext4", "xfs", "btrfs",
    "zfs", "f2fs", "jfs", "reiserfs", "vfat", "exfat", "ntfs", "ntfs3",
})
SHARED_FS_EXAMPLES = "nfs, lustre, gpfs, beegfs, cephfs"
ENV_MARKER = "collkit-environment-follows"
LINES_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ClusterBuild:
    """What a Slurm platform says about an MPI collkit is to build."""
    name: str                       # the [mpi.NAME] table's name, the build's name
    source: str                     # the platform file, for messages
    setup: tuple[str, ...] = ()     # [slurm] setup: first, as in the batch script
    modules: tuple[str, ...] = ()   # [mpi.NAME] modules
    mpicc: str = ""                 # "": the mpicc on PATH after the lines

    @property
    def where(self) -> str:
        return f"{self.source}: [mpi.{self.name}]"


def check_lines(value: object, what: str) -> tuple[str, ...]:
    """Shell lines from a platform file (they go through bash here and into
    batch scripts): a list of strings, each one line without control characters."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{what} must be a list of strings (one shell line each)")
    for line in value:
        bad = control_character(line)
        if bad:
            raise UserError(f"{what} lines must be single lines without control characters ({bad} in {line!r}): "
                            "give several list items")
    return tuple(value)


def environment(lines: tuple[str, ...], what: str) -> dict[str, str]:
    """The environment bash is left with after running `lines`, in order, as a
    batch script runs them (no `set -e`, so a line failing does not stop the
    next ones, exactly as in the job). What the lines print is shown on stderr:
    a failed `module load` says why there."""
    check_lines(list(lines), what)
    script = "\n".join(lines) + f"\nprintf '\\0%s\\0' {ENV_MARKER}\nenv -0\n"
    try:
        proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=LINES_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise UserError(f"{what}: bash is not installed here; it runs the lines, on this node and in each job") \
            from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{what} did not finish within {LINES_TIMEOUT_S:g} s in bash") from None
    marker = f"\0{ENV_MARKER}\0".encode()
    before, found, dump = proc.stdout.partition(marker)
    for line in (before + proc.stderr).decode(errors="replace").splitlines():
        if line.strip():
            builder.say(f"{what}: {line.rstrip()}")
    if proc.returncode != 0 or not found:
        last = next((ln for ln in reversed(proc.stderr.decode(errors="replace").splitlines()) if ln.strip()),
                    "no message")
        raise UserError(f"{what} fail in bash (exit status {proc.returncode}: {last.strip()}); "
                        "they must leave a shell that goes on (no exit)")
    env: dict[str, str] = {}
    for item in dump.split(b"\0"):
        key, eq, value = item.decode(errors="surrogateescape").partition("=")
        if eq and key:
            env[key] = value
    return env


def find_mpicc(req: ClusterBuild, env: dict[str, str] | None) -> Path:
    """The wrapper to build with: the given one (a path, or a name looked up on
    the PATH the lines left), else `mpicc` on that PATH."""
    name = req.mpicc or "mpicc"
    search = (env if env is not None else os.environ).get("PATH", "")
    if os.sep in name:
        path = Path(name).expanduser()
        if not path.is_absolute():
            path = Path(req.source).parent / path
        found = str(path) if path.is_file() and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(name, path=search)
    if found:
        return Path(found).absolute()
    after = "after its modules lines" if req.modules or req.setup else "(no modules lines given)"
    if req.mpicc:
        raise UserError(f"{req.where} mpicc {req.mpicc!r} is not an executable program {after}: give the path "
                        "of the MPI's compiler wrapper, or the modules lines that put it on PATH")
    raise UserError(f"{req.where}: no mpicc on PATH {after}: give the lines that load the MPI "
                    "(modules = [\"module load ...\"]) or its wrapper (mpicc = \"/path/mpicc\")")


def _unescape_mount(field: str) -> str:
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def fs_type(path: Path) -> str:
    """The type of the filesystem holding path (its nearest existing
    ancestor), from /proc/mounts: the longest mount point above it, the last
    mounted there winning; "" where that cannot be read (not Linux)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    p = p.resolve()
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    best, kind = -1, ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = Path(_unescape_mount(fields[1]))
        if (point == p or point in p.parents) and len(point.parts) >= best:
            best, kind = len(point.parts), fields[2]
    return kind


def node_local_warning(bench: Path) -> str:
    """One line when collkit-bench lies on a filesystem compute nodes usually
    do not see; "" otherwise."""
    kind = fs_type(bench)
    if kind not in NODE_LOCAL_FS:
        return ""
    cache = known.cache_root()
    in_cache = cache == bench or cache in bench.parents
    where = f"the build cache {cache}" if in_cache else f"{bench.parent}"
    fix = (f"set COLLKIT_CACHE to a directory on a filesystem they share ({SHARED_FS_EXAMPLES}, ...) and run again"
           if in_cache else f"install collkit on a filesystem they share ({SHARED_FS_EXAMPLES}, ...), "
                            "or give bench = in the platform file")
    return f"collkit: warning: {where} is on {kind}, a filesystem compute nodes may not see: {fix}"


_warned: set[str] = set()


def warn_if_node_local(bench: Path) -> None:
    line = node_local_warning(bench)
    if line and line not in _warned:
        _warned.add(line)
        print(line, file=sys.stderr, flush=True)


def ready(req: ClusterBuild) -> known.KnownMPI:
    """The MPI built (or found up to date) for a Slurm platform: its lines run,
    its wrapper found in their environment, collkit's C parts built with it
    under the table's name."""
    lines = (*req.setup, *req.modules)
    env = environment(lines, f"{req.where} modules") if lines else None
    mpicc = find_mpicc(req, env)
    existing = known.known().get(req.name)
    if existing is not None and existing.mpicc and Path(existing.mpicc).resolve() != mpicc.resolve():
        raise UserError(f"{req.where} builds with {mpicc}, but an MPI named '{req.name}' is known here already, "
                        f"built with {existing.mpicc}: rename the table (e.g. [mpi.{req.name}-cluster]), or make "
                        f"the name point at this MPI with collkit build --mpi {req.name} --mpicc {mpicc} --replace")
    builder.build(req.name, str(mpicc), None, None, env=env)
    known.clear()
    k = known.find(req.name)
    warn_if_node_local(k.part("bench"))
    return k
