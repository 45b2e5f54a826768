"""Metadata that makes a campaign reproducible, and never a secret.

Levels: `minimal` (versions and machine), `standard` (+ network devices, the
allow-listed environment, rank placement per distinct launch), `full` (+ every
launch's placement and the MPI libraries' full parameter listings as files).

Environment variables are taken only from the prefixes MPI stacks and batch
systems use; any whose name looks like a secret (token, password, key, ...) has
its value replaced by "<redacted>", and credentials inside URLs and option-style
secrets in values are cut out (campaign/secrets.py)."""

from __future__ import annotations

import os
import platform as _platform
import subprocess
import sys
from pathlib import Path

from collkit import __version__
from collkit.campaign.secrets import redact
from collkit.common.paths import repo_root

ENV_PREFIXES = ("OMPI_", "OPAL_", "PMIX_", "PRTE_", "ORTE_", "MPICH_", "MPIR_", "MPIEXEC_", "HYDRA_", "PMI_",
                "I_MPI_", "UCX_", "FI_", "NCCL_", "CUDA_VISIBLE", "SLURM_", "SRUN_", "SBATCH_", "OMP_",
                "COLLKIT_")
def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if env is None else env
    picked = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES)}
    return dict(sorted(redact(picked).items()))


def _run(args: list[str], timeout: float = 10.0) -> str:
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (res.stdout or res.stderr).strip()


def _first_line(text: str) -> str:
    return text.splitlines()[0].strip() if text else ""


def git_info() -> dict:
    """The checkout's commit; an installed package has none, and records the
    stamp it was built from (collkit --version's source) instead."""
    root = repo_root()
    if not (root / ".git").exists():
        from collkit.common.version import source
        return {"commit": None, "dirty": None, "source": source()}
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"]) or None
    status = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return {"commit": commit, "dirty": bool(status)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _platform.processor() or "unknown"


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return _platform.system()


def network_devices() -> dict[str, list[str]]:
    def names(path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []
    return {"net": names("/sys/class/net"), "infiniband": names("/sys/class/infiniband")}


def machine(level: str) -> dict:
    info = {
        "hostname": _platform.node(),
        "os": _os_name(),
        "kernel": _platform.release(),
        "arch": _platform.machine(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
    }
    if level != "minimal":
        info["network_devices"] = network_devices()
    return info


def _cmake_cache(bench: Path) -> dict[str, str]:
    # build/<mpi>/bench/collkit-bench -> build/<mpi>/CMakeCache.txt
    cache = bench.parent.parent / "CMakeCache.txt"
    out = {}
    try:
        for line in cache.read_text().splitlines():
            for key in ("CMAKE_C_COMPILER:", "MPI_C_COMPILER:", "CMAKE_BUILD_TYPE:", "CMAKE_C_FLAGS_RELWITHDEBINFO:"):
                if line.startswith(key):
                    out[key.rstrip(":")] = line.split("=", 1)[1]
    except OSError:
        pass
    return out


def _build_manifest(bench: Path) -> dict:
    """The manifest of the build collkit-bench belongs to (PREFIX/bin/collkit-bench
    -> PREFIX/collkit-build.json), or {} for a developer tree or a hand-made bench."""
    from collkit.common.errors import UserError
    from collkit.mpis.install import Build
    try:
        return Build.read(bench.parent.parent).manifest
    except UserError:
        return {}


def mpi_info(pm) -> dict:
    manifest = _build_manifest(pm.bench)
    info = {
        "mpirun": str(pm.install.mpirun),
        "mpirun_version": _first_line(_run([str(pm.install.mpirun), "--version"])),
        "launch_args": list(pm.install.flags),
        "launch_env": redact(pm.install.env),
        "bench": str(pm.bench),
        "family": pm.install.family,
    }
    if manifest:
        # The build's own record: the wrapper it was compiled with, the MPI it
        # identified itself as, and collkit's source.
        mpi = manifest.get("mpi", {}) if isinstance(manifest.get("mpi"), dict) else {}
        mpicc = str(manifest.get("mpicc", ""))
        return {**info, "compiler": mpicc, "compiler_version": str(manifest.get("c_compiler", "")),
                "build_type": str(manifest.get("build_type", "")), "mpicc": mpicc,
                "library_version": str(mpi.get("library_version", "")), "mpi_version": str(mpi.get("mpi_version", "")),
                "build": str(pm.bench.parent.parent), "collkit_source": str(manifest.get("source", ""))}
    cache = _cmake_cache(pm.bench)
    compiler = cache.get("CMAKE_C_COMPILER", "")
    return {**info, "compiler": compiler,
            "compiler_version": _first_line(_run([compiler, "--version"])) if compiler else "",
            "build_type": cache.get("CMAKE_BUILD_TYPE", ""), "mpicc": cache.get("MPI_C_COMPILER", "")}


def _cuda_aware(pm) -> dict:
    from collkit.backends import backend_for
    from collkit.common.errors import UserError
    try:
        return backend_for(pm.install).cuda_aware(pm.install).to_json()
    except UserError as exc:
        return {"aware": None, "how": str(exc)}


def library_listing(pm) -> str:
    """The library's full parameter listing (metadata level `full`): ompi_info or
    mpivars output, as the library prints it (its backend's `listing`). A line saying
    why when the tool is missing or the MPI has none collkit reads."""
    from collkit.backends import backend_for
    from collkit.common.errors import UserError
    try:
        return backend_for(pm.install).listing(pm.install)
    except UserError as exc:
        return f"# not available: {exc}\n"


def collect(spec, platform, argv: list[str]) -> dict:
    level = spec.metadata
    meta = {
        "level": level,
        "collkit": {"version": __version__, **git_info()},
        "command": argv,
        "python": sys.version.split()[0],
        "machine": machine(level),
        "platform": {"name": platform.name, "source": platform.source},
        "instrument": getattr(spec, "instrument", False),
        "mpis": {name: mpi_info(platform.mpi(name)) for name in spec.mpis},
    }
    if getattr(spec, "tuning", ()):
        # tuned:FILE selections: which file, for which library, copied where, with which sha256
        meta["tuning_files"] = [tf.describe() for tf in spec.tuning]
    from collkit.backends import devices
    for device in devices.chosen(getattr(spec, "backends", {})):
        # its section (GPUs, versions), and whether each MPI of the launch takes device
        # buffers: a question for the MPI's family, asked with the platform's installs
        meta[device.metadata_key] = device.metadata()
        meta[device.metadata_key]["mpi_cuda_aware"] = {name: _cuda_aware(platform.mpi(name)) for name in spec.mpis}
    if level != "minimal":
        meta["environment"] = environment()
    return meta


def knobs(points) -> list[dict[str, str]]:
    """Every distinct forcing environment the campaign set."""
    seen = []
    for p in points:
        env = dict(p.env)
        if env and env not in seen:
            seen.append(env)
    return seen


def finish(meta: dict, launches: list[dict], points) -> dict:
    """Add what only the launches could tell: library versions, hosts, placement."""
    meta = dict(meta)
    for name, info in meta.get("mpis", {}).items():
        versions = sorted({l.get("library_version", "") for l in launches if l.get("mpi") == name} - {""})
        info["library_version"] = versions[0] if len(versions) == 1 else versions
    meta["knobs"] = knobs(points)
    # the launches that ran, and in how many rounds (launch/schedule.py; resolved.json's
    # measure says how many were asked for)
    meta["launch_rounds"] = {"launches": len(launches),
                             "rounds": len({int(l.get("repeat", 0) or 0) for l in launches})}
    if meta.get("level") != "minimal":
        placements: dict[tuple, dict] = {}
        for l in launches:
            hosts = tuple(l.get("hosts") or ())
            placements.setdefault((l.get("mpi"), hosts), {"mpi": l.get("mpi"), "ranks": l.get("ranks"),
                                                          "hosts": sorted(set(hosts)),
                                                          "rank_to_host": list(hosts)})
        meta["placement"] = list(placements.values())
    if meta.get("level") == "full":
        meta["launches"] = [{k: v for k, v in l.items() if k != "env"} | {"env": redact(l.get("env", {}))}
                            for l in launches]
    return meta
