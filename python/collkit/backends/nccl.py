"""The `nccl` backend: NCCL's collectives on GPUs, forced through NCCL_ALGO/NCCL_PROTO.

NCCL chooses an algorithm (ring, tree, ...) and a protocol (LL, LL128, Simple)
per call; the environment variables NCCL_ALGO and NCCL_PROTO, read when a
communicator is created, restrict that choice. One launch of
collkit-bench-nccl creates one communicator, so each forcing is a launch of its
own: the forcing lives in the points' ``env``, recorded like the MPI
libraries' forcing, and collkit-bench reads the two variables back into each
record (``effective``).

Which names exist is discovered from the installed NCCL: its version from
``nccl.h`` and the names from the library itself (NCCL keeps its algorithm and
protocol names as strings, which it matches NCCL_ALGO against). Where the
library cannot be read the documented list for the header's version is used.
The documented list (NCCL's environment-variable documentation, checked
against NCCL 2.28.9's library here): algorithms Tree (2.4), Ring,
CollNetDirect and CollNetChain (2.12; "CollNet" before), NVLS (2.17),
NVLSTree (2.18), PAT (2.23); protocols LL, LL128 (2.5), Simple.

Spec (docs/gpu.md)::

    [backends]
    nccl = ["default", "ring", "tree.ll128", "allreduce/nvls", "all"]

    [gpu]
    device = "local_rank"          # or a list of device numbers, indexed by local rank

``NAME.PROTOCOL`` forces both, ``default.PROTOCOL`` the protocol alone, ``all``
every algorithm the collective has in the installed NCCL."""

from __future__ import annotations

import mmap
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from collkit.backends.device import DeviceBackend, Prerequisite
from collkit.backends.parameters import NCCL as NCCL_PARAMETERS
from collkit.campaign.gpu_spec import GPU_KEYS, parse_device, parse_gpu_table  # noqa: F401 (re-exported)
from collkit.common.errors import UserError, did_you_mean

BENCH_NAME = "collkit-bench-nccl"
DEVICE_ENV = "COLLKIT_BENCH_DEVICE"
READBACK = ("NCCL_ALGO", "NCCL_PROTO")


@dataclass(frozen=True)
class Algorithm:
    name: str                       # canonical, lower case
    native: str                     # NCCL_ALGO value, as NCCL spells it
    since: tuple[int, int]          # first NCCL version (major, minor) that has it
    collectives: tuple[str, ...]    # what NCCL runs with it


@dataclass(frozen=True)
class Protocol:
    name: str
    native: str
    since: tuple[int, int]


# Which collectives each algorithm serves is NCCL's own table (a forced
# algorithm that a collective does not have makes NCCL fail the call).
ALGORITHMS = (
    Algorithm("ring", "Ring", (2, 0), ("allreduce", "bcast", "reduce", "allgather", "reduce_scatter")),
    Algorithm("tree", "Tree", (2, 4), ("allreduce",)),
    Algorithm("collnet_direct", "CollNetDirect", (2, 12), ("allreduce", "allgather", "reduce_scatter")),
    Algorithm("collnet_chain", "CollNetChain", (2, 12), ("allreduce",)),
    Algorithm("nvls", "NVLS", (2, 17), ("allreduce", "allgather", "reduce_scatter")),
    Algorithm("nvls_tree", "NVLSTree", (2, 18), ("allreduce",)),
    Algorithm("pat", "PAT", (2, 23), ("allgather", "reduce_scatter")),
)
PROTOCOLS = (
    Protocol("ll", "LL", (2, 0)),
    Protocol("ll128", "LL128", (2, 5)),
    Protocol("simple", "Simple", (2, 0)),
)
# Collectives collkit-bench-nccl runs as grouped ncclSend/ncclRecv: NCCL_ALGO
# and NCCL_PROTO choose nothing there, so only "default" is offered.
P2P_COLLECTIVES = ("alltoall", "gather", "scatter")
# collkit's own algorithms on device buffers, run by collkit-bench-nccl with
# NCCL point-to-point (bench/device_parallel_rings.c): name -> (collective, what).
# Not part of "all" (that is NCCL's own algorithms); no protocol suffix.
DEVICE_ALGORITHMS = {
    "parallel_rings": ("allgather", "Parallel Rings on GPUs: one ring per local GPU across the nodes, the "
                                    "intra-node exchange overlapped with each ring step (libcollkit's "
                                    "parallel_rings schedule on NCCL send/recv); equal ranks per node"),
}


@dataclass(frozen=True)
class Offer:
    version: str                      # "2.28.9", from nccl.h
    header: str                       # path of nccl.h
    library: str                      # path of libnccl.so, "" when not found
    source: str                       # "library" (names read from it) or "documented"
    algorithms: tuple[Algorithm, ...]
    protocols: tuple[Protocol, ...]
    missing: dict[str, str] = field(default_factory=dict)  # known name -> why the installed NCCL lacks it

    def to_json(self) -> dict:
        return {"version": self.version, "header": self.header, "library": self.library, "source": self.source,
                "algorithms": {a.name: a.native for a in self.algorithms},
                "protocols": {p.name: p.native for p in self.protocols}, "missing": dict(self.missing)}


@dataclass(frozen=True)
class Forcing:
    """One way of running a collective: what the points file calls it and its environment."""
    name: str                         # "default", "ring", "ring.ll128", "default.ll128"
    algorithm: Algorithm | None
    protocol: Protocol | None

    @property
    def native(self) -> str:
        return "/".join(x.native for x in (self.algorithm, self.protocol) if x is not None)

    @property
    def env(self) -> tuple[tuple[str, str], ...]:
        out = []
        if self.algorithm is not None:
            out.append(("NCCL_ALGO", self.algorithm.native))
        if self.protocol is not None:
            out.append(("NCCL_PROTO", self.protocol.native))
        return tuple(out)


# ---------------------------------------------------------------- discovery

def _search_dirs(sub: str) -> list[Path]:
    dirs = []
    for var in ("NCCL_HOME", "CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]) / sub)
    dirs += [Path("/usr/local/cuda") / sub, Path("/usr/local") / sub, Path("/usr") / sub]
    if sub == "lib":
        dirs += [Path("/usr/local/cuda/lib64"), Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64")]
    return dirs


def find_header() -> Path | None:
    for d in _search_dirs("include"):
        if (d / "nccl.h").is_file():
            return d / "nccl.h"
    return None


def find_library() -> Path | None:
    for d in _search_dirs("lib"):
        for name in ("libnccl.so.2", "libnccl.so"):
            if (d / name).is_file():
                return d / name
    return None


def header_version(text: str) -> tuple[int, int, int] | None:
    parts = []
    for key in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"):
        m = re.search(rf"^#define {key} (\d+)\s*$", text, re.MULTILINE)
        if not m:
            return None
        parts.append(int(m.group(1)))
    return parts[0], parts[1], parts[2]


def names_in_library(path: Path, names: list[str]) -> set[str]:
    """Which of `names` the library holds as NUL-terminated strings (its
    tables of algorithm and protocol names)."""
    found = set()
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for name in names:
            if m.find(b"\0" + name.encode() + b"\0") >= 0:
                found.add(name)
    return found


def offer_for(version: tuple[int, int, int], header: str, library: str,
              in_library: set[str] | None) -> Offer:
    """The algorithms and protocols of NCCL `version`: the documented ones
    since that version, and, when the library's names are known, only those
    it holds."""
    missing: dict[str, str] = {}
    vtext = ".".join(map(str, version))

    def keep(item) -> bool:
        if version[:2] < item.since:
            missing[item.name] = f"NCCL {vtext} has no {item.native} (added in {item.since[0]}.{item.since[1]})"
            return False
        if in_library is not None and item.native not in in_library:
            missing[item.name] = f"the installed NCCL library ({library}) does not name {item.native}"
            return False
        return True

    return Offer(version=vtext, header=header, library=library,
                 source="library" if in_library is not None else "documented",
                 algorithms=tuple(a for a in ALGORITHMS if keep(a)),
                 protocols=tuple(p for p in PROTOCOLS if keep(p)), missing=missing)


_CACHE: dict[tuple, Offer] = {}


def discover() -> Offer:
    """The installed NCCL's offer; UserError (one line) when NCCL is not installed."""
    header = find_header()
    if header is None:
        raise UserError("backends.nccl needs NCCL: nccl.h was not found (set NCCL_HOME, or install libnccl-dev); "
                        "see docs/gpu.md")
    text = header.read_text(errors="replace")
    version = header_version(text)
    if version is None:
        raise UserError(f"{header} does not define NCCL_MAJOR/NCCL_MINOR/NCCL_PATCH; is it NCCL's header?")
    lib = find_library()
    key = (str(header), version, str(lib), lib.stat().st_mtime_ns if lib else 0)
    if key not in _CACHE:
        in_lib = None
        if lib is not None:
            try:
                in_lib = names_in_library(lib, [x.native for x in (*ALGORITHMS, *PROTOCOLS)])
            except (OSError, ValueError):
                in_lib = None  # unreadable: the documented list for the version stands
        _CACHE[key] = offer_for(version, str(header), str(lib or ""), in_lib)
    return _CACHE[key]


# ---------------------------------------------------------------- forcing

def _protocol(offer: Offer, name: str, raw: str) -> Protocol:
    for p in offer.protocols:
        if p.name == name or p.native == name:
            return p
    if name in offer.missing:
        raise UserError(f"backends.nccl '{raw}': {offer.missing[name]}")
    extra = did_you_mean(name, [p.name for p in offer.protocols])
    raise UserError(f"backends.nccl '{raw}': unknown NCCL protocol '{name}'{extra}; "
                    f"NCCL {offer.version} has: {', '.join(p.name for p in offer.protocols)}")


def _known(name: str) -> Algorithm | None:
    return next((a for a in ALGORITHMS if name in (a.name, a.native)), None)


def resolve(selection: tuple[str, ...], collectives: tuple[str, ...], offer: Offer,
            ) -> dict[str, list[tuple[Forcing, str]]]:
    """Per collective: (forcing, skip reason or "") for every selected name.

    Unknown names are a UserError with the closest name; a name the installed
    NCCL lacks, or that a collective does not have, is a skip with the reason
    (so that one spec serves several NCCL versions and collectives)."""
    out: dict[str, list[tuple[Forcing, str]]] = {c: [] for c in collectives}
    for raw in selection:
        coll, sep, rest = raw.partition("/")
        if not sep:
            coll, rest = "", raw
        elif coll not in collectives:
            raise UserError(f"backends.nccl '{raw}' names collective '{coll}', which the spec does not measure")
        algo_name, dot, proto_name = rest.partition(".")
        proto = _protocol(offer, proto_name, raw) if dot else None
        targets = [coll] if coll else list(collectives)
        if algo_name == "all":
            for c in targets:
                if c in P2P_COLLECTIVES:
                    continue
                for a in offer.algorithms:
                    if c in a.collectives:
                        out[c].append((Forcing(a.name + (f".{proto.name}" if proto else ""), a, proto), ""))
            continue
        if algo_name == "default":
            for c in targets:
                why = f"nccl {c} runs as grouped ncclSend/ncclRecv, which NCCL_PROTO does not select" \
                    if proto is not None and c in P2P_COLLECTIVES else ""
                out[c].append((Forcing(f"default.{proto.name}" if proto else "default", None, proto), why))
            continue
        if algo_name in DEVICE_ALGORITHMS:
            if proto is not None:
                raise UserError(f"backends.nccl '{raw}': {algo_name} is collkit's own algorithm on NCCL "
                                "send/recv; NCCL_PROTO does not choose its protocol")
            home = DEVICE_ALGORITHMS[algo_name][0]
            if home not in collectives:
                raise UserError(f"backends.nccl '{raw}': {algo_name} is an {home}, which the spec does not measure")
            for c in targets:
                out[c].append((Forcing(algo_name, None, None), "" if c == home else f"{algo_name} is an {home}"))
            continue
        algo = _known(algo_name)
        if algo is None:
            extra = did_you_mean(algo_name, [a.name for a in ALGORITHMS] + list(DEVICE_ALGORITHMS) + ["default", "all"])
            raise UserError(f"backends.nccl: unknown NCCL algorithm '{algo_name}'{extra}; "
                            f"NCCL {offer.version} has: {', '.join(a.name for a in offer.algorithms)}")
        name = algo.name + (f".{proto.name}" if proto else "")
        serves = [c for c in targets if c in algo.collectives]
        if not serves and coll:
            raise UserError(f"backends.nccl '{raw}': NCCL has no {algo.name} {coll}; {coll} has "
                            f"{', '.join(a.name for a in ALGORITHMS if coll in a.collectives) or 'only default'}")
        if not any(c in algo.collectives for c in collectives):
            raise UserError(f"backends.nccl '{raw}': NCCL runs {algo.name} only for "
                            f"{', '.join(algo.collectives)}, which the spec does not measure")
        lacking = offer.missing.get(algo.name, "")
        for c in targets:
            if c not in algo.collectives:
                why = (f"nccl {c} runs as grouped ncclSend/ncclRecv, which NCCL_ALGO does not select"
                       if c in P2P_COLLECTIVES else f"NCCL has no {algo.name} {c}")
            else:
                why = lacking
            out[c].append((Forcing(name, algo, proto), why))
    return {c: list({f.name: (f, why) for f, why in v}.values()) for c, v in out.items()}


# ---------------------------------------------------------------- devices

@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    driver: str
    memory_mib: str
    bus_id: str


def _smi() -> str | None:
    """nvidia-smi, or COLLKIT_NVIDIA_SMI (tests, unusual installs)."""
    return os.environ.get("COLLKIT_NVIDIA_SMI") or shutil.which("nvidia-smi")


def _run(argv: list[str], timeout: float = 20.0) -> tuple[int, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return p.returncode, (p.stdout if p.returncode == 0 else (p.stderr or p.stdout)).strip()


def gpus() -> tuple[list[Gpu], str]:
    """The GPUs of this machine and, when there are none, why (one phrase)."""
    smi = _smi()
    if smi is None:
        return [], "nvidia-smi not found"
    rc, text = _run([smi, "--query-gpu=index,name,driver_version,memory.total,pci.bus_id",
                     "--format=csv,noheader,nounits"])
    if rc != 0:
        last = text.splitlines()[-1] if text else f"exit status {rc}"
        return [], f"nvidia-smi: {last}"
    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 5 and cells[0].isdigit():
            found.append(Gpu(int(cells[0]), cells[1], cells[2], cells[3], cells[4]))
    return found, "" if found else "nvidia-smi lists no GPU"


def require_gpus() -> list[Gpu]:
    found, why = gpus()
    if not found:
        raise UserError(f"backends.nccl needs an NVIDIA GPU and this machine has none ({why}); run the nccl "
                        "points on a GPU machine (docs/gpu.md) or remove nccl from [backends]")
    return found


# ---------------------------------------------------------------- points

def points(spec, mpi: str, offer: Offer, gpus_here: int | None, point) -> list:
    """The nccl points of a spec, launched with `mpi`'s mpirun. `gpus_here`:
    GPUs of the local machine (None on a cluster, where collkit-bench-nccl
    checks at run time). `point(spec, coll, ranks, size, **fields)` is plan.py's
    maker of a Point (device.py: why backends/ does not build one itself)."""
    chosen = resolve(spec.backends["nccl"], spec.collectives, offer)
    device = getattr(spec, "gpu_device", "local_rank")
    out = []
    for ranks in spec.ranks:
        for coll in spec.collectives:
            for forcing, why in chosen[coll]:
                for size in spec.sizes:
                    p = point(spec, coll, ranks, size, backend="nccl", mpi=mpi, algorithm=forcing.name,
                              native=forcing.native, env=tuple(sorted(((DEVICE_ENV, device),) + forcing.env)),
                              readback=READBACK)
                    reason = why
                    if not reason and p.in_place and coll in ("reduce_scatter", "alltoall"):
                        reason = (f"nccl {coll} has no in-place form that matches MPI's"
                                  if coll == "alltoall" else
                                  "NCCL's in-place reduce_scatter leaves the result at rank x count, MPI's at 0")
                    if not reason and gpus_here is not None and ranks > gpus_here:
                        reason = (f"NCCL refuses two ranks of one communicator on one GPU ('Duplicate GPU "
                                  f"detected'); this machine has {gpus_here} GPU(s) for {ranks} ranks")
                    out.append(replace(p, skip_reason=reason) if reason else p)
    return out


def bench_beside(bench: Path) -> Path:
    """collkit-bench-nccl sits beside collkit-bench in a build configured
    with -DCOLLKIT_NCCL=ON."""
    return bench.with_name(BENCH_NAME)


def with_nccl_bench(platform, mpis: tuple[str, ...]):
    """The platform launching collkit-bench-nccl (which runs every backend)
    for the given libraries; UserError when this machine has no GPU (checked
    first: that is the answer a GPU-less machine needs) or the program is not
    built here. On a cluster neither is checked here."""
    from collkit.campaign.platform import with_bench
    if platform.slurm is None and platform.simgrid is None:
        require_gpus()
    return with_bench(platform, mpis, bench_beside,
                      lambda name, bench: f"backends.nccl needs {BENCH_NAME} for {name}, and {bench} is missing: "
                                          f"configure {bench.parent.parent} with -DCOLLKIT_NCCL=ON and build it "
                                          "(docs/gpu.md)")


# ---------------------------------------------------------------- metadata

_TERMINAL_CODE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_terminal_codes(text: str) -> str:
    """nvidia-smi underlines the header of `topo -m` with terminal escape codes
    even into a pipe (seen on an H100, driver 580): metadata keeps the text."""
    return _TERMINAL_CODE.sub("", text)


def metadata() -> dict:
    """GPUs, driver, CUDA and NCCL versions, and the GPU topology where
    nvidia-smi shows it; every part that cannot be read is empty, never an error."""
    found, why = gpus()
    info: dict = {"gpus": [g.__dict__ for g in found], "why_none": why}
    smi = _smi()
    if smi is not None and found:
        rc, text = _run([smi])
        m = re.search(r"CUDA Version:\s*([0-9.]+)", text) if rc == 0 else None
        info["driver_cuda_version"] = m.group(1) if m else ""
        rc, topo = _run([smi, "topo", "-m"])
        info["topology"] = strip_terminal_codes(topo) if rc == 0 else ""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc:
        rc, text = _run([nvcc, "--version"])
        m = re.search(r"release ([0-9.]+)", text) if rc == 0 else None
        info["cuda_toolkit"] = m.group(1) if m else ""
    try:
        info["nccl"] = discover().to_json()
    except UserError as exc:
        info["nccl"] = {"error": str(exc)}
    return info


# ---------------------------------------------------------------- the backend

# Where `collkit mpis` looks for NCCL's header (the check it has always made; a
# campaign's discovery searches more places: find_header).
NCCL_HEADERS = (Path("/usr/include/nccl.h"), Path("/usr/local/cuda/include/nccl.h"))


class NCCLBackend(DeviceBackend):
    """The nccl backend's answers to the campaign layer (backends/device.py)."""
    key = "nccl"
    library = "NCCL"
    tables = ("gpu",)
    metadata_key = "gpu"
    parameters_title = "NCCL (its documented variables; [parameters.nccl])"

    def spec_fields(self, raw: dict, selected: bool) -> dict[str, object]:
        if "gpu" not in raw:
            return {}
        if not selected:
            raise UserError("[gpu] chooses the devices of the nccl backend, and [backends] has no nccl")
        return {"gpu_device": parse_gpu_table(raw["gpu"])}

    def parameters(self) -> dict:
        return NCCL_PARAMETERS       # NCCL reads its variables under their own names

    def points(self, spec, platform, point) -> list:
        """Launched with the spec's first MPI's mpirun. A machine without a GPU is
        refused here, before anything launches; on a cluster, collkit-bench-nccl
        checks the nodes' GPUs when it starts."""
        if platform.simgrid is not None:
            raise UserError("backends.nccl cannot run on a simulated platform (SimGrid simulates MPI, not NCCL); "
                            "run it on a GPU machine (docs/gpu.md)")
        offer = discover()
        gpus_here = len(require_gpus()) if platform.slurm is None else None
        return points(spec, spec.mpis[0], offer, gpus_here, point)

    def launch_platform(self, spec, platform):
        """collkit-bench-nccl runs every backend, so the whole campaign launches it."""
        if spec.instrument:
            raise UserError("instrument = true and backends.nccl cannot be combined: collkit-bench-nccl has no "
                            "instrumented variant; run them as two campaigns")
        return with_nccl_bench(platform, spec.mpis[:1])

    def metadata(self) -> dict:
        return metadata()

    def prerequisites(self) -> list[Prerequisite]:
        nvcc = shutil.which("nvcc")
        header = next((str(h) for h in NCCL_HEADERS if h.exists()), "")
        return [Prerequisite("CUDA (nvcc)", bool(nvcc), nvcc or "",
                             "" if nvcc else "module load cuda (GPU campaigns only)"),
                Prerequisite("NCCL (nccl.h)", bool(header), header,
                             "" if header else "install NCCL or set NCCL_HOME (GPU campaigns only)")]
