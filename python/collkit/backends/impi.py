"""Intel MPI: the presets its I_MPI_ADJUST_<COLL> variables select, and how to force one.

Intel MPI is built on MPICH but does not read MPICH's algorithm CVARs: it chooses each
collective's algorithm from ``I_MPI_ADJUST_<COLL>=<presetid>[:<conditions>];...`` (read
at MPI_Init), else from its tuning file for the machine and fabric (``I_MPI_DEBUG=5``
names it: ``tuning_<cpu>_<fabric>.dat`` under ``opt/mpi/etc``).

Names. Up to release 2021.12 Intel's developer reference numbered the algorithms of each
collective (allreduce 1 "Recursive doubling" ... 12); from 2021.13 it says "presets are
algorithmic derivatives; the number of presets surpasses the number of algorithms" and
lists the algorithms without numbers. 2021.19's ``impi_info`` gives allreduce the range
0-32, bcast 0-22: more ids than named algorithms, and no document maps an id to one. So
collkit names each id ``impi_preset_<N>``, a name no other library uses, and promises no
message schedule by it (docs/algorithms.md, name parity). ``impi_info -v
I_MPI_ADJUST_<COLL>`` gives the range; 0 is the library's own choice.

What forcing does, checked here on 2021.19 (shm): a user-defined op that logs its calls
shows each preset's reductions (tests/python/test_impi.py). At 4 ranks and 1024 ints,
presets 1, 2 and 8 (numbered recursive doubling, Rabenseifner's and ring up to 2021.12)
make 2 reductions of 1024, 512 then 256, and 3 of 256 on every rank: those schedules'
shapes; 5 and 6 reduce on ranks 0 and 2 only, 10-12 on rank 0 only. Medians of 100 1 MiB
allreduces at 2 ranks ran 163-781 us by preset against the default's 338. An id past the
range (33) makes MPI_Init print "Incorrect algorithm: ALLREDUCE=33, will be ignored" and
run the default, so collkit refuses such ids before anything launches.
``I_MPI_ADJUST_FAILURE_ON_COLL_FALLBACK=1``, which should turn a preset that cannot run a
call into an error, aborts MPI_Init on this machine's own tuning file ("BARRIER: algo #7
has fallback"): unusable, so a preset outside its conditions may run another one without
a word, as Open MPI's tuned does.

No MPI_T readback: MPIR_CVAR_USE_<COLL>, the variable MPI_T lists for the preset, reads
"" in a launch whose I_MPI_ADJUST_<COLL> is 8 (checked: a campaign's records), so records
of forced presets show their environment only; the logging op above is the evidence.

Forcing is per launch (the environment); :data:`RUNTIME_SWITCH` says why not per call.

Tuning files. `collkit tune --format impi`: lines of I_MPI_ADJUST_<COLL> settings with
size conditions, per process count (backends/impi_adjust.py says why that shape); a
`tuned:FILE` launch of p ranks gets the lines that hold at p in its environment.
`--format impi-json`: Intel's own JSON tree, which the library reads itself through
I_MPI_TUNING=FILE (backends/impi_tree.py: its shape and what 2021.19 does with it)."""

from __future__ import annotations

import re
from pathlib import Path

from collkit.backends import impi_adjust, impi_tree
from collkit.backends.offer import Excluded, LibraryAlgorithm, LibraryOffer
from collkit.backends.protocol import RuntimeSwitch, ToolBackend
from collkit.common.errors import UserError
from collkit.common.tool import run_tool
from collkit.library.registry import COLLECTIVES
from collkit.mpis.install import MPIInstall

# The variable stem of each collkit collective: collkit-bench's reduce_scatter calls
# MPI_Reduce_scatter_block.
STEM = {"bcast": "BCAST", "reduce": "REDUCE", "gather": "GATHER", "scatter": "SCATTER",
        "allgather": "ALLGATHER", "reduce_scatter": "REDUCE_SCATTER_BLOCK", "allreduce": "ALLREDUCE",
        "alltoall": "ALLTOALL"}
PREFIX = "impi_preset_"
# An id larger than this is not a preset count any release has shown (2021.19: 32)
MAX_PRESETS = 256

_RANGE = re.compile(r"^\s*range:\s*(\d+)\s*-\s*(\d+)\s*$", re.MULTILINE)
_VERSION = re.compile(r"Intel\(R\) MPI Library[^,]*, Version (\S+)")

# Intel's "message size" of a call, in collkit-bench's bytes (a reduction's vector, one
# rank's block of reduce_scatter), as the size conditions of I_MPI_ADJUST_<COLL> read
# it. Shown on 2021.19 at 4 ranks (tests/python/test_impi.py, the logging op): allreduce
# and reduce count*typesize (4096 B for 1024 ints ran the preset of 4096-4096, not of
# 16384), reduce_scatter_block recvcount*typesize (1024 B for 256 ints a rank).
# bcast: every rank passes the same count*typesize, the only size its call has; not
# shown by a run (no user op). allgather, alltoall, scatter and gather: one rank's block
# (count*typesize), in I_MPI_ADJUST conditions and the tuning tree alike, shown by their
# messages (tests/python/test_impi_schedules.py: at 64 KiB a block, a condition whose
# upper bound is 65536 runs its preset and one of 65535 does not).
MESSAGE_SIZE_IS_COLLKIT_BYTES = ("allreduce", "reduce", "reduce_scatter", "bcast", "allgather", "alltoall", "scatter",
                                 "gather")
# A preset id past every collective's range (MAX_PRESETS): MPI_Init prints
# "Incorrect algorithm: ALLREDUCE=999, will be ignored" (tune/proof.py's broken copy)
BROKEN_PRESET = 999

NOTE = ("Intel's reference names no preset id (2021.13 on); a preset outside its conditions runs "
        "another one without a word")


def variable(collective: str) -> str:
    return f"I_MPI_ADJUST_{STEM[collective]}"


def parse_range(text: str, what: str) -> int:
    """The largest preset id in `impi_info -v I_MPI_ADJUST_<COLL>`'s output."""
    m = _RANGE.search(text)
    if m is None:
        raise UserError(f"impi_info printed no range for {what} (got {text.strip()[:120]!r})")
    low, high = int(m.group(1)), int(m.group(2))
    if low != 0 or not 0 <= high <= MAX_PRESETS:
        raise UserError(f"impi_info gave {what} the range {low}-{high}, not 0-N with N <= {MAX_PRESETS}")
    return high


def parse_version(text: str) -> str:
    m = _VERSION.search(text)
    return m.group(1) if m else ""


def build_offer(ranges: dict[str, int], version: str = "", tool: str = "") -> LibraryOffer:
    """The offer from the preset ranges (collective -> largest id)."""
    algorithms = []
    for coll in COLLECTIVES:
        for n in range(1, ranges.get(coll, 0) + 1):
            algorithms.append(LibraryAlgorithm(
                collective=coll, name=f"{PREFIX}{n}", native=f"preset {n}", native_id=str(n),
                env={variable(coll): str(n)}, readback=()))
    library = f"Intel MPI {version}" if version else "Intel MPI"
    defaults = {c: f"the library's own choice ({variable(c)}=0: its tuning file for this CPU and fabric); {NOTE}"
                for c in COLLECTIVES}
    excluded = tuple(Excluded(c, "preset 0", "0 is the library's own choice (the default point)", "0")
                     for c in COLLECTIVES if c in ranges)
    return LibraryOffer(mpi="impi", library=library, algorithms=tuple(algorithms), defaults=defaults,
                        default_native={c: ("auto", "0") for c in ranges}, excluded=excluded, tool=tool)


def find_tool(mpi: MPIInstall) -> Path:
    """impi_info in the bin directory of the install's launcher."""
    run = Path(mpi.mpirun)
    tried = []
    for folder in dict.fromkeys([run.parent, run.resolve().parent]):
        cand = folder / "impi_info"
        tried.append(cand)
        if cand.is_file():
            return cand
    raise UserError(f"cannot find impi_info next to {run} (looked for {', '.join(str(t) for t in tried)})")


def discover(mpi: MPIInstall, tool: Path) -> LibraryOffer:
    env = mpi.environment()
    ranges = {c: parse_range(run_tool([str(tool), "-v", variable(c)], env=env), variable(c)) for c in COLLECTIVES}
    version = ""
    launcher = Path(mpi.mpirun)
    try:
        version = parse_version(run_tool([str(launcher), "--version"], env=env, timeout=30))
    except UserError:
        pass  # the offer is whole without it; the build's identity has the version string
    return build_offer(ranges, version=version, tool=str(tool))


RUNTIME_SWITCH = RuntimeSwitch(
    per_call=False, new_communicators=False,
    how="I_MPI_ADJUST_<COLL> in the environment, read at MPI_Init: one preset per launch",
    evidence=("MPI_T exposes I_MPI_ADJUST_<COLL> as the string control variable MPIR_CVAR_USE_<COLL> (none of "
              "MPICH's <COLL>_INTRA_ALGORITHM variables exist); a write after MPI_Init is accepted and reads "
              "back, but changes nothing. Checked on 2021.19 at 4 ranks with a logging op (1024 ints): after "
              "writing 8 (ring's 3 reductions of 256) or 2 (512, 256) the next allreduce on MPI_COMM_WORLD and "
              "on a communicator made after the write still reduced 1024 twice, the default's; 8 from the "
              "environment gave 3 of 256 from the first call (tests/python/test_impi.py)"))


class IntelMPIBackend(ToolBackend):
    """Intel MPI: presets forced through I_MPI_ADJUST_<COLL>, one launch each."""

    family = "impi"
    forcing_knobs = "I_MPI_ADJUST presets"
    runtime_switch = RUNTIME_SWITCH
    own_variables = re.compile(r"I_MPI_[A-Z0-9_]{1,96}")
    tuning_format = impi_adjust.FORMAT
    # Intel's own JSON tree, read through I_MPI_TUNING (backends/impi_tree.py); each
    # method below tells the two formats apart by the file's content
    other_tuning_formats = (impi_tree.FORMAT,)
    tuning_file_kind = "an Intel MPI I_MPI_ADJUST file"
    broken_how = f"every preset id set to {BROKEN_PRESET}"
    # Intel MPI runs its own choice past a bad id, so the broken copy is seen in its
    # warning, not in an exit status
    refusal_sign = "Incorrect algorithm"

    def find_tool(self, install: MPIInstall) -> Path:
        return find_tool(install)

    def read_offer(self, install: MPIInstall, tool: Path) -> LibraryOffer:
        return discover(install, tool)

    def listing(self, install: MPIInstall) -> str:
        return run_tool([str(find_tool(install)), "-a"], env=install.environment())

    # Intel's autotuner (I_MPI_TUNING_MODE=auto) tries the presets on the program's own
    # calls and keeps the fastest; Intel documents it for Intel processors. Whether it did
    # anything in a run shows in the tuning state it dumps at MPI_Finalize
    # (I_MPI_TUNING_BIN_DUMP): equal across plain runs, different after it ran (checked
    # here, 2021.19 on this Intel Xeon VM; a run on an AMD VM dumped the same bytes).
    autotuner = "Intel MPI's autotuner (I_MPI_TUNING_MODE=auto)"

    def autotuner_env(self, dump: Path) -> dict[str, str]:
        return {"I_MPI_TUNING_MODE": "auto", **self.tuning_dump_env(dump)}

    def tuning_dump_env(self, dump: Path) -> dict[str, str]:
        return {"I_MPI_TUNING_BIN_DUMP": str(dump)}

    def file_kind(self, fmt: str) -> str:
        return "an Intel MPI JSON tuning tree" if fmt == impi_tree.FORMAT else self.tuning_file_kind

    def check_tuning_file(self, tf, offer: LibraryOffer, collectives: tuple[str, ...]) -> None:
        check_presets(tf, offer)

    def tuned_env(self, offer: LibraryOffer, path: str, companion: dict[str, str] | None = None,
                  ranks: int | None = None, text: str | None = None) -> dict[str, str]:
        text = _text(path) if text is None else text
        if _is_tree(text):
            impi_tree.read(text, path)
            # the library reads the tree itself and chooses by comm_size: every rank count
            return {**(companion or {}), **impi_tree.environment(str(Path(path).resolve()))}
        settings = impi_adjust.read(text, path)
        return {**(companion or {}), **impi_adjust.environment(settings, ranks, path)}

    def proof_env(self, path: Path, ranks: int) -> dict[str, str]:
        text = _text(str(path))
        if _is_tree(text):
            impi_tree.read(text, str(path))
            return impi_tree.environment(str(path.resolve()))
        return proof_env(impi_adjust.read(text, str(path)), ranks)

    def broken_copy(self, text: str) -> str:
        if _is_tree(text):
            return impi_tree.broken(text, BROKEN_PRESET)
        return impi_adjust.broken(text, BROKEN_PRESET)


def _is_tree(text: str) -> bool:
    """Intel's JSON tree rather than I_MPI_ADJUST lines (impi_tree.read checks the claim)."""
    return text.lstrip().startswith("{")


def _text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the Intel MPI tuning file {path} ({exc})") from None


def check_presets(tf, offer: LibraryOffer) -> None:
    """Intel MPI warns about a preset id past a collective's range and runs its own
    choice: refuse it first (the ranges impi_info gave). `tf`: campaign/tuning.py's
    TuningFile."""
    top: dict[str, int] = {}
    for a in offer.algorithms:
        top[variable(a.collective)] = max(top.get(variable(a.collective), 0), int(a.native_id))
    text = tf.data.decode("utf-8")
    if _is_tree(text):
        named = impi_tree.read(text, tf.source).presets()
    else:
        named = [(s.variable, i.preset) for s in impi_adjust.read(text, tf.source) for i in s.items]
    for var, preset in named:
        high = top.get(var, MAX_PRESETS)
        if preset > high:
            raise UserError(f"{tf.source}: {var} names preset {preset}, past {offer.library}'s range "
                            f"0-{high} (impi_info), which it would ignore; use 0-{high}")


def proof_env(settings: tuple[impi_adjust.Setting, ...], ranks: int) -> dict[str, str]:
    """Every variable of the file, as set at `ranks` processes or else at the first
    count it has a line for: the proof runs one rank count, and must load all of
    them (any preset runs correctly at any count; outside its conditions Intel MPI
    substitutes another)."""
    env: dict[str, str] = {}
    for s in sorted(settings, key=lambda s: not s.holds(ranks)):
        env.setdefault(s.variable, s.value())
    return env
