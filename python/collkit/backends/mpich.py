"""MPICH: the algorithm values that mpivars lists, and how to force one.

Forcing sets ``MPIR_CVAR_<COLL>_INTRA_ALGORITHM=<value>`` through MPI_T
after MPI_Init, for the point only (collkit-bench's ``set`` key), with
``MPIR_CVAR_DEVICE_COLLECTIVES=none`` (the ch4 device must not substitute
its own collective) and ``MPIR_CVAR_COLLECTIVE_FALLBACK=error`` (MPICH's
default, ``silent``, replaces an inapplicable forced algorithm without a
word) in the environment. The algorithm is not set in the environment because
MPI_Init's own collectives would then run under it too (below). Checked on the PyPI MPICH 5.0.2 with a commutative user op that logs
its calls (ring at 8 ranks: 7 calls of n/8 on every rank; recursive doubling:
3 calls of n; reduce_scatter_allgather: n/2, n/4, n/8):

* the forced value is what runs, and an inapplicable one fails the call with
  "User set collective algorithm is not usable for the provided arguments";
* MPI_Init itself runs collectives under the forced value: ch4 does a
  one-element MPI_Allreduce over the node's ranks and a start-up allgather
  and bcast. With FALLBACK=error a value those cannot use aborts MPI_Init:
  allreduce ``reduce_scatter_allgather`` (needs count >= 2^floor(log2 p))
  and ``smp``, bcast ``smp``, allgather ``recursive_doubling`` at a rank
  count that is not a power of two;
* an unknown value aborts MPI_Init ("Fatal error in internal_Init").

MPI_T reads these CVARs back as integers: the position of the value in
mpivars' list (ring is 8 for allreduce), so the offer carries the names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from collkit.backends import Excluded, LibraryAlgorithm, LibraryOffer, run_tool
from collkit.backends.parameters import mpich_parameter
from collkit.common.errors import UserError
from collkit.mpis.install import MPIInstall
from collkit.library.registry import COLLECTIVES

# CVAR stems that are not the collective's name in capitals (looked up when
# used, so that importing this module needs no registry): the benchmark calls
# MPI_Reduce_scatter_block.
CVAR_STEM = {"reduce_scatter": "REDUCE_SCATTER_BLOCK"}

FORCE_ENV = {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}

# CVAR value -> canonical name, per collective, as read from
# src/mpi/coll/<coll>/<coll>_intra_<value>.c. Values not listed keep their own
# name.
NAMES: dict[str, dict[str, str]] = {
    "bcast": {
        # The root sends to the rank p/2 away first, then p/4, ...
        "binomial": "binomial_halving",
        # Both scatter ceil(count/p)-byte pieces (the last ones short or
        # empty); libcollkit's scatter_allgather_* cut p near-equal blocks,
        # so they keep MPICH's names.
        "pipelined_tree": "pipelined_tree",  # MPIR_CVAR_BCAST_TREE_TYPE/KVAL tree in chunks
        "tree": "tree",                      # same tree, whole message (kary, k=2 by default)
        "nb": "nb",
    },
    "gather": {"binomial": "binomial", "nb": "nb"},
    "scatter": {"binomial": "binomial", "nb": "nb"},
    "allgather": {
        "brucks": "bruck",
        "k_brucks": "k_brucks",    # radix MPIR_CVAR_ALLGATHER_BRUCKS_KVAL, generic transport
        "recursive_doubling": "recursive_doubling",
        "ring": "ring",
        "recexch_doubling": "recexch_doubling",
        "recexch_halving": "recexch_halving",
        "nb": "nb",
    },
    "alltoall": {
        "brucks": "bruck",
        "k_brucks": "k_brucks",
        "pairwise": "pairwise",
        "pairwise_sendrecv_replace": "pairwise_sendrecv_replace",
        # isend/irecv to every rank in rotated order, MPIR_CVAR_ALLTOALL_THROTTLE
        # (32) at a time: libcollkit's linear.
        "scattered": "linear",
        "nb": "nb",
    },
    "reduce": {
        # Receive from relrank|mask for mask = 1, 2, 4, ...: distances doubling.
        "binomial": "binomial_doubling",
        # Recursive-halving reduce-scatter, then binomial gather.
        "reduce_scatter_gather": "rabenseifner",
        "nb": "nb",
    },
    "allreduce": {
        "recursive_doubling": "recursive_doubling",
        "recursive_multiplying": "recursive_multiplying",
        # Recursive-halving reduce-scatter + recursive-doubling allgather.
        "reduce_scatter_allgather": "rabenseifner",
        "tree": "tree",
        "recexch": "recexch",
        # Ring reduce-scatter of ceil(count/p)-element blocks (the last ones
        # short or empty) leaving rank r with block r, then
        # MPIR_Allgatherv_intra_ring in MPIR_CVAR_ALLGATHERV_PIPELINE_MSG_SIZE
        # pieces: not libcollkit's ring (Open MPI's), so a name of its own
        # (tests/python/test_parity.py).
        "ring": "mpich_ring",
        "k_reduce_scatter_allgather": "k_reduce_scatter_allgather",
        "nb": "nb",
    },
    "reduce_scatter": {
        "noncommutative": "noncommutative",
        # Every block outside the own subtree at each step, forwarding for
        # p != 2^k: not libcollkit's recursive_doubling (needed blocks only,
        # pairs folded); Open MPI runs the same schedule under the same name.
        "recursive_doubling": "recursive_doubling_full",
        # Each rank sends every other rank its own contribution directly
        # (to rank+i at step i): not the ring, which forwards partial sums.
        "pairwise": "pairwise",
        "recursive_halving": "recursive_halving",
        "nb": "nb",
    },
}

# Values that are not algorithms for a blocking intra-communicator call here.
# "nb" (the blocking call run as the nonblocking one plus a wait) runs for
# every collective and is kept.
EXCLUDE = {
    "auto": "no forcing: MPICH's own selection (the default)",
    # On one node MPICH refuses it ("not usable"); for bcast and allreduce it
    # even aborts MPI_Init, whose own collectives then cannot run.
    "smp": "needs ranks on more than one node (a node hierarchy); refused on one node",
    # Hands the call to NCCL/RCCL when MPICH is built with them, otherwise
    # silently to "auto" whatever COLLECTIVE_FALLBACK says (seen here).
    "ccl": "delegates to NCCL/RCCL; without them MPICH silently runs its own choice",
}

# Conditions outside which MPICH refuses the forced value (an error, since we
# set COLLECTIVE_FALLBACK=error). Each seen on this machine.
REQUIRES: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("allgather", "recursive_doubling"): (("pow2_ranks",), "otherwise the call fails"),
    ("reduce_scatter", "noncommutative"): (("pow2_ranks",), "otherwise the call fails"),
    ("alltoall", "pairwise_sendrecv_replace"): (("in_place",), "otherwise the call fails"),
    ("reduce", "reduce_scatter_gather"): (("count_ge_pow2",), "otherwise the call fails"),
    ("allreduce", "reduce_scatter_allgather"): (("count_ge_pow2",), "otherwise the call fails"),
}

_CVAR = re.compile(r"^\t(MPIR_CVAR_\w+)\s*=(\S*)\t")
_ITEM = re.compile(r"^([A-Za-z0-9_]+)\s+-\s+(.*)$")
_VERSION = re.compile(r"^MPICH Version:\s*(\S+)")


@dataclass(frozen=True)
class Cvar:
    name: str
    value: str                      # current value as mpivars prints it
    items: tuple[tuple[str, str], ...]  # (value name, description), in MPI_T order


def parse(text: str) -> dict[str, Cvar]:
    """Read mpivars output: each control variable with the value list in its description."""
    cvars: dict[str, Cvar] = {}
    current: tuple[str, str] | None = None
    items: list[tuple[str, str]] = []

    def close() -> None:
        if current:
            cvars[current[0]] = Cvar(current[0], current[1], tuple(items))

    for line in text.splitlines():
        if line.startswith("\t") or not line.strip():
            close()
            current, items = None, []
            if m := _CVAR.match(line):
                current = (m.group(1), m.group(2))
            continue
        if current and (m := _ITEM.match(line.strip())):
            items.append((m.group(1), m.group(2).strip()))
    close()
    return cvars


def parse_version(text: str) -> str:
    for line in text.splitlines():
        if m := _VERSION.match(line.strip()):
            return m.group(1)
    return ""


def canonical(collective: str, native: str) -> str:
    return NAMES.get(collective, {}).get(native, native.lower().replace("-", "_"))


def algorithm_cvar(collective: str) -> str:
    return f"MPIR_CVAR_{CVAR_STEM.get(collective, collective.upper())}_INTRA_ALGORITHM"


def default_readback(collective: str) -> tuple[str, ...]:
    return (algorithm_cvar(collective), "MPIR_CVAR_DEVICE_COLLECTIVES", "MPIR_CVAR_COLLECTIVE_FALLBACK")


TUNING_CVAR = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"


def tuned_env(offer: LibraryOffer, json_file: str, companion: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a `tuned:FILE` launch: MPICH as a user would run it with
    the file. The MPIR-level selection file, every collective's algorithm CVAR at
    `auto` (the file is consulted only there; set in the environment, as nothing is
    forced, it also holds for MPI_Init's own collectives, which the file must cover
    anyway), an inapplicable choice an error rather than silently replaced, and the
    file's companion settings (its provenance sidecar's "environment": which
    collectives it takes from the ch4 device, tune/mpich_device.py). The device is
    not switched off wholesale as for forcing: where it keeps a collective, the
    default it runs is the one the tuning compared against."""
    env = {"MPIR_CVAR_COLLECTIVE_FALLBACK": FORCE_ENV["MPIR_CVAR_COLLECTIVE_FALLBACK"]}
    env.update(companion or {})
    env[TUNING_CVAR] = json_file
    for coll in sorted({a.collective for a in offer.algorithms}):
        env[algorithm_cvar(coll)] = "auto"
    return env


def tuned_readback(collective: str) -> tuple[str, ...]:
    """MPI_T variables of a `tuned:FILE` point: the default's, and the file MPICH was given."""
    return (*default_readback(collective), TUNING_CVAR)


def _value_name(cvar: Cvar | None) -> str:
    """The current value of an enumerated CVAR by name (mpivars prints the index)."""
    if cvar is None:
        return ""
    if cvar.value.isdigit() and int(cvar.value) < len(cvar.items):
        return cvar.items[int(cvar.value)][0]
    return cvar.value


def build_offer(cvars: dict[str, Cvar], version: str = "", tool: str = "") -> LibraryOffer:
    where = f" ({tool})" if tool else ""
    if not any(algorithm_cvar(c) in cvars for c in COLLECTIVES):
        raise UserError(f"MPICH{where} lists no MPIR_CVAR_<COLL>_INTRA_ALGORITHM variables")
    library = f"MPICH {version}" if version else "MPICH"
    device = _value_name(cvars.get("MPIR_CVAR_DEVICE_COLLECTIVES"))

    algorithms: list[LibraryAlgorithm] = []
    excluded: list[Excluded] = []
    defaults: dict[str, str] = {}
    default_native: dict[str, tuple[str, str]] = {}
    enums: dict[str, dict[str, str]] = {}
    for extra in ("MPIR_CVAR_DEVICE_COLLECTIVES", "MPIR_CVAR_COLLECTIVE_FALLBACK"):
        if extra in cvars:
            enums[extra] = {str(i): n for i, (n, _) in enumerate(cvars[extra].items)}
    for coll in COLLECTIVES:
        var = algorithm_cvar(coll)
        cvar = cvars.get(var)
        if cvar is None or not cvar.items:
            continue
        enums[var] = {str(i): n for i, (n, _) in enumerate(cvar.items)}
        used: set[str] = set()
        for native, desc in cvar.items:
            if native in EXCLUDE:
                excluded.append(Excluded(coll, native, EXCLUDE[native], native))
                if native == "auto":
                    default_native[coll] = ("auto", "auto")
                    via = f"; ch4 device collectives: {device}" if device else ""
                    defaults[coll] = f"auto: {desc}{via}"
                continue
            name = canonical(coll, native)
            if name in used:
                name = native
            used.add(name)
            requires, note = REQUIRES.get((coll, native), ((), ""))
            algorithms.append(LibraryAlgorithm(
                collective=coll, name=name, native=native, native_id=native,
                env=dict(FORCE_ENV), cvars={var: native}, readback=default_readback(coll),
                requires=requires, note=note))
    params = {c.name: mpich_parameter(c.name, c.value, c.items) for c in cvars.values()}
    return LibraryOffer(mpi="mpich", library=library, algorithms=tuple(algorithms),
                        defaults=defaults, default_native=default_native,
                        excluded=tuple(excluded), enums=enums, tool=tool, parameters=params)


def find_tool(mpi: MPIInstall) -> Path:
    """mpivars in the bin directory of the install's mpirun."""
    run = Path(mpi.mpirun)
    tried: list[Path] = []
    for folder in dict.fromkeys([run.parent, run.resolve().parent]):
        cand = folder / "mpivars"
        tried.append(cand)
        if cand.is_file():
            return cand
    raise UserError(f"cannot find mpivars next to {run} (looked for "
                    f"{', '.join(str(t) for t in tried)})")


def _tool_env(mpi: MPIInstall) -> dict[str, str]:
    # mpivars is an MPI program: a stale or mistyped algorithm variable in the
    # caller's environment would abort its MPI_Init, and it is not needed to
    # list the values.
    env = mpi.environment()
    for key in [k for k in env if "ALGORITHM" in k and k.startswith(("MPIR_CVAR_", "MPIR_PARAM_", "MPICH_"))]:
        del env[key]
    return env


def discover(mpi: MPIInstall, tool: Path) -> LibraryOffer:
    env = _tool_env(mpi)
    text = run_tool([str(tool)], env=env)
    version = ""
    mpichversion = tool.parent / "mpichversion"
    if mpichversion.is_file():
        version = parse_version(run_tool([str(mpichversion)], env=env))
    return build_offer(parse(text), version=version, tool=str(tool))
