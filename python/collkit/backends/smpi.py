"""SMPI, SimGrid's MPI: the MPI library of a simulated platform ("the smpi backend").

On a simulated machine SMPI plays the part Open MPI and MPICH play on a real
one: its collectives are the library's own, and SimGrid ships many algorithms
for each, chosen per run with ``smpirun --cfg=smpi/<collective>:NAME``.

Which names exist is asked of SimGrid itself, never written down here: a run
with a name SimGrid does not know aborts and prints the valid ones ("Collective
'allreduce' has no algorithm 'x'! Valid algorithms: default, lr, ..."). collkit
runs that once per collective on a one-host platform and caches the lists in
``build/simgrid/smpi-algorithms.json``, keyed by the SimGrid version and the
smpirun/library files, so a SimGrid upgrade is rediscovered.

Canonical names: where an SMPI algorithm is the same algorithm as a
libcollkit registry algorithm (or a canonical name the Open MPI / MPICH tables
use), it carries that name; :data:`NAMES` says why for each line, from reading
SimGrid 3.32's ``src/smpi/colls/``. Every other algorithm keeps its SMPI name.

Open MPI and MPICH on a simulated platform: a spec written for a real machine
(``mpi = ["openmpi", "mpich"]``) runs unchanged. There is no Open MPI inside a
simulation, so each stands for SMPI with that library's *decision logic*
(``smpi/coll-selector:ompi`` or ``mpich``): SimGrid re-implements both
libraries' selection rules and algorithms. Their "default" is that selector,
and their forced names are SMPI's algorithms (the same offer as smpi). The
library string in records says so.

Timing caveat, stated in every offer: SMPI's own reductions are not charged
simulated time (SimGrid applies the op without smpi_execute_flops), while
libcollkit's are (lib/core/buffer.c charges 1 flop per reduced byte). At sizes
where the local reduction matters, SMPI's algorithms look faster than they
would be; compare them with that in mind.

Switching at run time (:data:`RUNTIME_SWITCH`): none. ``colls::set_collectives()``
(src/smpi/colls/smpi_coll.cpp) reads ``smpi/coll-selector`` and every ``smpi/<coll>``
configuration item once, when SMPI starts, and stores one function pointer per
collective that every call then goes through; SMPI has no MPI_T control variables
(under SMPI, collkit-bench's MPI_T readback answers `unsupported`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from collkit.backends.offer import Excluded, LibraryAlgorithm, LibraryOffer
from collkit.backends.protocol import MPIBackend, RuntimeSwitch
from collkit.common.errors import UserError
from collkit.library.registry import COLLECTIVES
from collkit.mpis.install import MPIInstall


# SimGrid's configuration item per collkit collective. The benchmark calls
# MPI_Reduce_scatter_block; SMPI 3.32 implements it by calling its
# reduce_scatter collective with equal counts, so smpi/reduce_scatter steers it.
def cfg_item(collective: str) -> str:
    return f"smpi/{collective}"


# The selector an MPI library name stands for on a simulated platform.
SELECTORS = {"smpi": "", "openmpi": "ompi", "mpich": "mpich"}
LIBRARY_NAMES = {"smpi": "SMPI", "openmpi": "SMPI with Open MPI's selection logic (coll-selector ompi)",
                 "mpich": "SMPI with MPICH's selection logic (coll-selector mpich)"}

REDUCTION_NOTE = ("SMPI's own reductions cost no simulated time; libcollkit's are charged at the host "
                  "speed (1 flop per reduced byte)")

# SMPI name -> canonical name, per collective, only where the algorithm is the
# same one: every pair that names a libcollkit algorithm is compared message by
# message with ck_trace from SimGrid's own trace of the run
# (tests/python/test_parity.py, docs/algorithms.md "Name parity"), which also
# checks that the names kept apart below do differ. Read from SimGrid 3.32's
# src/smpi/colls/<coll>/<coll>-<name>.cpp and first checked by simulation: with local work made free, each pair gives libcollkit's
# simulated time to within 0.1% at 16 ranks (tests/python/test_simgrid.py). The
# linear ones send the same messages but post them differently (SMPI's flattree
# bcast posts every send at once, its linear gather/scatter take one rank at a
# time; libcollkit the other way round), so their times differ; the canonical
# "linear" already covers both postings (Open MPI's basic_linear is isend-based).
# Not mapped although named alike: scatter ompi_binomial (78 us vs libcollkit's
# binomial 43 us in that check) and reduce_scatter mpich_rdb (132 vs 104 us).
NAMES: dict[str, dict[str, str]] = {
    "bcast": {
        # MPICH's binomial: receive from the lowest set bit, then send with the
        # mask going down, so the root serves p/2 first (distance halving).
        "binomial_tree": "binomial_halving",
        "flattree": "linear",                        # root sends to every rank in turn
        # scatter_rdb_allgather and scatter_LR_allgather (binomial scatter +
        # recursive-doubling / ring allgather) cut the vector into
        # ceil(n/p)-byte pieces, the last ones short or empty; libcollkit's
        # scatter_allgather_* cut p near-equal blocks: different bytes per
        # message (tests/python/test_parity.py), so they keep their names.
        "ompi_split_bintree": "split_binary_tree",   # Open MPI's, ported
    },
    "reduce": {
        # MPICH's binomial reduce: a rank sends once its lowest set bit is
        # reached, so leaves send at distance 1 first (distance doubling).
        "binomial": "binomial_doubling",
        "flat_tree": "linear",
        # scatter_gather is an older MPICH reduce_scatter_gather whose last
        # block takes the remainder (MPICH gives it to the first blocks):
        # not libcollkit's rabenseifner when p' does not divide the count.
    },
    "gather": {
        "ompi_basic_linear": "linear",
        "ompi_binomial": "binomial",
        "ompi_linear_sync": "linear_sync",
    },
    "scatter": {
        # ompi_basic_linear sends in rank order 0, 1, ...: not libcollkit's
        # linear (root + 1 first), so it keeps its name.
        "ompi_linear_nb": "linear_nb",
    },
    "allgather": {
        "bruck": "bruck",
        "rdb": "recursive_doubling",          # p = 2^k only (REQUIRES)
        # Faraj & Yuan's "ring": step i sends the own block straight to
        # rank + i, nothing is forwarded: not the ring allgather. Renamed
        # because its own name would claim libcollkit's ring.
        "ring": "smpi_ring",
        "ompi_neighborexchange": "neighbor_exchange",   # even p only (REQUIRES)
    },
    "reduce_scatter": {
        "ompi_basic_recursivehalving": "recursive_halving",
        "ompi_ring": "ring",
        "ompi_butterfly": "butterfly",
    },
    "allreduce": {
        "rdb": "recursive_doubling",
        # lr (logical ring) reduces the count % p remainder with a second,
        # default allreduce, and rab_rdb (MPICH's order) gives the remainder
        # to the last block: neither is libcollkit's ring / rabenseifner for
        # a count that p (p') does not divide, so both keep their names.
        "ompi_ring_segmented": "segmented_ring",
    },
    "alltoall": {
        # basic_linear (Open MPI's) posts sends in decreasing rank order:
        # not libcollkit's linear; keeps its name.
        "bruck": "bruck",
        # p steps, step i sends to rank+i and receives from rank-i: Open
        # MPI's pairwise, not libcollkit's (MPICH's, rank XOR i for p = 2^k),
        # but its linear_shift between ranks (the self-message aside:
        # docs/algorithms.md, name parity).
        "ring": "linear_shift",
    },
}

# Where SMPI silently runs something else (read in the same sources).
REQUIRES: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("allgather", "rdb"): (("pow2_ranks",), "otherwise SMPI runs MPICH's old non-power-of-two recursive "
                                            "doubling, not libcollkit's folding"),
    ("allgather", "ompi_neighborexchange"): (("even_ranks",), "otherwise SMPI runs its own 'ring' (smpi_ring)"),
    ("allreduce", "lr"): (("count_ge_ranks",), "otherwise SMPI runs its default allreduce; a count that "
                                                "p does not divide has its remainder reduced by the default"),
}

EXCLUDE = {
    "default": "no forcing: SMPI's default (the selector of the platform's MPI library)",
    "automatic": "times every algorithm on each call and keeps the fastest: not one algorithm",
}
# Selection logics of other libraries: offered under their SMPI names
# (ompi, mpich, mvapich2, impi), described as what they are.
SELECTOR_NAMES = {"ompi": "Open MPI", "mpich": "MPICH", "mvapich2": "MVAPICH2", "impi": "Intel MPI"}

_VALID = re.compile(r"Collective '(\w+)' has no algorithm '[^']*'! Valid algorithms: ([^.\n]*)")
_ONE_HOST = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="discovery" routing="Full">
    <host id="h0" speed="1Gf"/>
  </zone>
</platform>
"""
_PROBE = "__collkit_probe__"


def parse_valid(text: str) -> dict[str, list[str]]:
    """Collective -> valid names from SimGrid's abort message(s)."""
    out = {}
    for coll, names in _VALID.findall(text):
        out[coll] = [n.strip() for n in names.split(",") if n.strip()]
    return out


def _version(smpirun: Path) -> str:
    try:
        proc = subprocess.run([str(smpirun), "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"cannot run {smpirun}: {exc}") from None
    line = (proc.stdout or proc.stderr).strip().splitlines()
    return line[0] if line else "unknown"


def _cache_key(smpirun: Path, bench: Path) -> dict:
    def mtime(p: Path) -> int:
        try:
            return p.stat().st_mtime_ns
        except OSError:
            return 0
    return {"smpirun": str(smpirun), "smpirun_mtime": mtime(smpirun), "version": _version(smpirun),
            "bench": str(bench), "bench_mtime": mtime(bench)}


def probe(smpirun: Path, bench: Path, collective: str) -> list[str]:
    """Ask SimGrid for the valid names of one collective (one short abort)."""
    with tempfile.TemporaryDirectory(prefix="collkit-smpi-") as tmp:
        plat = Path(tmp) / "one.xml"
        plat.write_text(_ONE_HOST)
        hosts = Path(tmp) / "hosts"
        hosts.write_text("h0\n")
        # collkit-bench without arguments reaches MPI_Init (where SMPI checks
        # the name) and then exits; nothing else runs.
        argv = [str(smpirun), "-platform", str(plat), "-hostfile", str(hosts), "-np", "1",
                f"--cfg={cfg_item(collective)}:{_PROBE}", f"--cfg=smpi/tmpdir:{tmp}", str(bench)]
        env = dict(os.environ, TMPDIR=tmp)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise UserError(f"cannot ask SimGrid for its {collective} algorithms: {exc}") from None
    names = parse_valid(proc.stdout + proc.stderr).get(collective)
    if not names:
        last = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        raise UserError(f"SimGrid did not list its {collective} algorithms (smpirun exit status "
                        f"{proc.returncode}: {last[-1] if last else 'no output'})")
    return names


def valid_names(smpirun: Path, bench: Path, cache: Path | None = None) -> dict[str, list[str]]:
    """Every collective's SMPI algorithm names, from the cache or from SimGrid."""
    if not bench.exists():
        raise UserError(f"collkit-bench is not built for SimGrid ({bench} missing): run `make setup`")
    cache = cache or bench.parent.parent / "smpi-algorithms.json"
    key = _cache_key(smpirun, bench)
    try:
        cached = json.loads(cache.read_text())
        if cached.get("key") == key:
            return cached["names"]
    except (OSError, json.JSONDecodeError, AttributeError):
        pass
    names = {c: probe(smpirun, bench, c) for c in COLLECTIVES}
    try:
        cache.write_text(json.dumps({"key": key, "names": names}, indent=1))
    except OSError:
        pass  # a read-only build directory only costs the probes next time
    return names


def offer(mpi: str, names: dict[str, list[str]], version: str) -> LibraryOffer:
    """The offer of SMPI as library `mpi` (smpi, or openmpi/mpich by their selector)."""
    if mpi not in SELECTORS:
        raise UserError(f"unknown MPI '{mpi}' on a simulated platform; choose one of {', '.join(SELECTORS)}")
    algs, excluded = [], []
    defaults, default_native = {}, {}
    selector = SELECTORS[mpi] or "default"
    for coll in COLLECTIVES:
        item = cfg_item(coll)
        table = NAMES.get(coll, {})
        taken = set()
        for native in names.get(coll, []):
            if native in EXCLUDE:
                excluded.append(Excluded(coll, native, EXCLUDE[native], native))
                continue
            canonical = table.get(native, native.lower())
            if canonical in taken:        # two SMPI names for one canonical: keep the native one
                canonical = native.lower()
            taken.add(canonical)
            requires, note = REQUIRES.get((coll, native), ((), ""))
            if native in SELECTOR_NAMES:
                note = f"{SELECTOR_NAMES[native]}'s selection logic as SimGrid reimplements it"
            algs.append(LibraryAlgorithm(collective=coll, name=canonical, native=native, native_id=native,
                                         env={item: native}, readback=(), requires=requires, note=note))
        defaults[coll] = (f"smpi/coll-selector:{selector}" if SELECTORS[mpi] else
                          "SMPI's default algorithm (smpi/coll-selector:default)") + f"; {REDUCTION_NOTE}"
        default_native[coll] = (selector, selector)
    return LibraryOffer(mpi=mpi, library=f"{LIBRARY_NAMES[mpi]} {version}".strip(), algorithms=tuple(algs),
                        defaults=defaults, default_native=default_native, excluded=tuple(excluded),
                        tool="smpirun --cfg=smpi/<collective>:<invalid name>")


def discover(mpi: str, smpirun: Path, bench: Path) -> LibraryOffer:
    names = valid_names(smpirun, bench)
    version = _version(smpirun).replace("SimGrid version", "").strip()
    return offer(mpi, names, f"(SimGrid {version})" if version else "")


def selector_cfg(mpi: str) -> list[str]:
    """--cfg items that make SMPI behave as library `mpi` for everything not forced."""
    sel = SELECTORS.get(mpi, "")
    return [f"smpi/coll-selector:{sel}"] if sel else []


RUNTIME_SWITCH = RuntimeSwitch(
    per_call=False, new_communicators=False,
    how="smpirun --cfg=smpi/<collective>:NAME, read once when SMPI starts: one algorithm per launch",
    evidence=("src/smpi/colls/smpi_coll.cpp: colls::set_collectives() sets each collective's function pointer "
              "from the smpi/<coll> item at start-up; SMPI has no MPI_T control variables"))


class SMPIBackend(MPIBackend):
    """SimGrid's SMPI, the library of a simulated platform, standing for `library`
    (smpi itself, or openmpi / mpich through their selection logic, :data:`SELECTORS`)
    and asked through the SMPI build of collkit-bench `bench`. A simulated platform's
    installs are named after the library they stand for (their family would say Open
    MPI), so backends/families.py's `platform_backend` picks this one from the platform."""

    family = "smpi"
    runtime_switch = RUNTIME_SWITCH

    def __init__(self, library: str = "smpi", bench: Path | None = None):
        self.library = library
        self.bench = bench

    def discover(self, install: MPIInstall) -> LibraryOffer:
        if self.bench is None:
            raise UserError("SMPI's algorithms are asked of SimGrid on a simulated platform: give "
                            "--platform sim:NAME (collkit list --platform sim:NAME)")
        return discover(self.library, Path(install.mpirun), self.bench)

    def env_flags(self, env: dict[str, str]) -> list[str]:
        raise UserError("smpirun takes SimGrid configuration items (--cfg=), not environment flags; "
                        "run the program on a real MPI")
