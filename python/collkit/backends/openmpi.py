"""Open MPI: the coll/tuned algorithms that ompi_info lists, and how to force one.

Forcing needs ``coll_tuned_use_dynamic_rules=1`` at start-up plus
``coll_tuned_<coll>_algorithm=<id>`` when a communicator is made. collkit sets
the first in the launch's environment (``OMPI_MCA_*``) and the second through
MPI_T for the point alone, whose calls then run on a duplicate of MPI_COMM_WORLD
made after the setting (collkit-bench's ``comm=fresh``; "Switching at run time"
below). So the default (MPI_COMM_WORLD, no id set: with dynamic rules on and
nothing forced, ``ompi_coll_tuned_<coll>_intra_dec_dynamic`` falls through to the
same fixed decision as without them), libcollkit's algorithms and every forced
algorithm of a rank count run in one launch, and compare inside it
(`LibraryOffer.launch_env`, analysis/launches.py). Checked on Open MPI 4.1.4 with
a commutative user op that logs its calls and the pml monitoring component (which
peer got how many bytes), first with the id in the environment:

* the forced id is what runs; without use_dynamic_rules it is ignored;
* an id outside the enumeration (99, -1) or an unknown name only prints
  "An invalid value was supplied for an enum variable" and the library's own
  choice runs, with success: never hand such a value to Open MPI, which is why
  :meth:`LibraryOffer.force` refuses it;
* a dynamic rules file (``coll_tuned_dynamic_rules_filename``) wins over the
  forced id; an empty file name in the environment switches it off;
* on MPI_COMM_WORLD here the blocking collectives come from tuned (priority
  30): self (75), sync (50) and inter (40) rank higher but do not take
  intra-communicator collectives (see PASS_THROUGH), han disqualifies itself
  when all ranks share a node and has priority 0 anyway, adapt and sm are
  disabled. So nothing needs excluding on this install; a component that
  would override tuned elsewhere (hcoll, a han raised above tuned, ...) is
  excluded with ``OMPI_MCA_coll=^name`` only when ompi_info shows it above
  tuned. Excluding a component that does not exist is harmless (checked:
  ``OMPI_MCA_coll=^hcoll,ucc,nosuchthing`` starts and runs normally).

Switching at run time (:data:`RUNTIME_SWITCH`): not per call. ``coll_tuned_<coll>_algorithm``
is writable through MPI_T (ompi_info: "status:writeable"; ``coll_tuned_use_dynamic_rules``
is read-only), but tuned reads it only when a communicator's module is enabled:
``tuned_module_enable`` (ompi/mca/coll/tuned/coll_tuned_module.c) runs
``COLL_TUNED_EXECUTE_IF_DYNAMIC`` per collective, which calls
``ompi_coll_tuned_forced_getvalues`` to copy the variable into that communicator's
``tuned_module->user_forced[COLL]`` (and only when use_dynamic_rules was on at start-up;
then it also installs the ``*_intra_dec_dynamic`` function for the collective). The
decision function of every later call, e.g. ``ompi_coll_tuned_allreduce_intra_dec_dynamic``
(coll_tuned_decision_dynamic.c), reads ``user_forced[ALLREDUCE].algorithm`` of its
communicator, never the variable. Checked here on Open MPI 4.1.4 (4 ranks, a user op that
counts its calls; started with use_dynamic_rules=1 and allreduce forced to 3, recursive
doubling, then MPI_T_cvar_write of 4, ring): MPI_COMM_WORLD kept recursive doubling (2 op
calls per rank before and after the write), a communicator duplicated after the write ran
the ring (3 op calls).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from collkit.backends import gpu_mpi
from collkit.backends import ompi_components
from collkit.backends import ompi_rules
from collkit.backends.offer import Excluded, LibraryAlgorithm, LibraryOffer
from collkit.backends.parameters import ompi_parameter
from collkit.backends.protocol import RuntimeSwitch, ToolBackend
from collkit.common.errors import UserError
from collkit.common.tool import run_tool
from collkit.library.registry import COLLECTIVES
from collkit.mpis.install import MPIInstall

# The benchmark calls MPI_Reduce_scatter_block, which tuned steers with its own
# parameter (coll_tuned_reduce_scatter_algorithm only drives MPI_Reduce_scatter).
# Other collectives' parameters carry their own name (looked up when used, so
# that importing this module needs no registry).
TUNED_PARAM = {"reduce_scatter": "reduce_scatter_block"}


def tuned_param(collective: str) -> str:
    return TUNED_PARAM.get(collective, collective)

# Native enumerator name -> canonical name, per collective, as read from
# ompi/mca/coll/base/coll_base_<coll>.c and confirmed by the traffic each one
# produced at 8 ranks. Names not listed keep their native name
# (lower case, '-' -> '_').
NAMES: dict[str, dict[str, str]] = {
    "bcast": {
        "basic_linear": "linear",
        # coll_tuned_bcast_algorithm_chain_fanout (4) chains hang off the root:
        # not the single chain, whose canonical name "chain" is taken below.
        "chain": "multi_chain",
        # One chain along ranks relative to the root = libcollkit's chain.
        "pipeline": "chain",
        "split_binary_tree": "split_binary_tree",
        "binary_tree": "binary_tree",
        # ompi_coll_base_topo_build_bmtree: a rank's parent clears its highest
        # set bit, so the root serves distance 1, 2, 4, ... (0->1, 0->2, 1->3, ...).
        "binomial": "binomial_doubling",
        "knomial": "knomial",
        # ompi_coll_base_bcast_intra_scatter_allgather(_ring): binomial
        # scatter of ceil(count/p)-element pieces (the last ones short or
        # empty), then a recursive-doubling (ring) allgather. libcollkit's
        # scatter_allgather_rd/_ring cut p near-equal blocks, so the bytes per
        # message differ whenever p does not divide the count: own names.
        "scatter_allgather": "scatter_allgather",
        "scatter_allgather_ring": "ompi_scatter_allgather_ring",
    },
    "reduce": {
        "linear": "linear",
        "chain": "multi_chain",    # as for bcast: several chains into the root
        # One chain into the root. libcollkit has no reduce chain: the name
        # only lines Open MPI's pipeline up with the bcast of the same shape.
        "pipeline": "chain",
        "binary": "binary",
        # build_in_order_bmtree: a rank's parent clears its lowest set bit, so
        # leaves send at distance 1 first, then 2, 4 (1->0, 3->2, 2->0, ...):
        # the MPICH-style tree libcollkit calls binomial_doubling.
        "binomial": "binomial_doubling",
        "in-order_binary": "in_order_binary",
        # ompi_coll_base_reduce_intra_redscat_gather: vector halving with
        # distance doubling as MPICH's, but non-powers of two fold by
        # exchanging half vectors (even ranks stay) and windows split
        # floor/ceil rather than into p' blocks: not libcollkit's
        # rabenseifner (MPICH's) unless p = 2^k and p | count.
        "rabenseifner": "redscat_gather",
    },
    "gather": {
        "basic_linear": "linear",
        "binomial": "binomial",    # in-order binomial tree, subtrees forwarded whole
        "linear_sync": "linear_sync",
    },
    "scatter": {
        # The root sends to ranks 0, 1, ... in order (skipping itself);
        # libcollkit's linear starts at root + 1 (traced through SMPI's port).
        "basic_linear": "basic_linear",
        # ompi_coll_base_scatter_intra_binomial: in-order binomial tree whose
        # parents serve the nearest child first (1, 2, 4 blocks from the
        # root); libcollkit's binomial is MPICH's, farthest (biggest subtree)
        # first (tests/python/test_parity.py). Named like the bcast tree that
        # serves distance 1 first.
        "binomial": "binomial_doubling",
        "linear_nb": "linear_nb",
    },
    "allgather": {
        "linear": "linear",        # gather to rank 0, then bcast (not a direct exchange)
        "bruck": "bruck",
        "recursive_doubling": "recursive_doubling",
        "ring": "ring",
        "neighbor": "neighbor_exchange",   # Chen et al.: alternating neighbours, two blocks a step
        "two_proc": "two_proc",
    },
    "reduce_scatter": {
        "basic_linear": "basic_linear",    # reduce to rank 0, then scatter
        # ompi_coll_base_reduce_scatter_block_intra_recursivedoubling (MPICH's,
        # ported): XOR partners 1, 2, 4 sending every block outside the own
        # subtree, n(p-2^k)/p, results forwarded to partnerless ranks for
        # p != 2^k. libcollkit's recursive_doubling sends only the blocks
        # still needed and folds pairs: a name of its own
        # (tests/python/test_parity.py).
        "recursive_doubling": "recursive_doubling_full",
        # XOR partners 4, 2, 1 halving the data: libcollkit's recursive_halving.
        "recursive_halving": "recursive_halving",
        # Halving the data with distances 1, 2, 4 (doubling): no libcollkit twin.
        "butterfly": "butterfly",
    },
    "allreduce": {
        "basic_linear": "basic_linear",    # linear reduce to rank 0, then linear bcast
        # Tuned's own reduce then bcast, each chosen by its fixed rules: not
        # libcollkit's reduce_bcast (binomial + binomial) at every size.
        "nonoverlapping": "nonoverlapping",
        "recursive_doubling": "recursive_doubling",
        # ompi_coll_base_allreduce_intra_ring: p blocks (the first count % p
        # one longer), each one message: libcollkit's ring
        # (tests/python/test_parity.py).
        "ring": "ring",
        # ompi_coll_base_allreduce_intra_ring_segmented: one ring
        # reduce-scatter per phase of segment-sized pieces of every block,
        # then the allgather of whole blocks. libcollkit's ring_seg sends each
        # block's segments one after another within a step: not this.
        "segmented_ring": "segmented_ring",
        # ompi_coll_base_allreduce_intra_redscat_allgather: the order of
        # MPICH's (n/2 to rank XOR 1 first; ops 512, 256 at 4 ranks), but a
        # half-vector fold keeping the even ranks and floor/ceil window
        # splits: the same messages as libcollkit's rabenseifner only for
        # p = 2^k and p | count, so it keeps its own name.
        "rabenseifner": "redscat_allgather",
    },
    "alltoall": {
        # ompi_coll_base_alltoall_intra_basic_linear posts its isends in
        # decreasing rank order (rank-1, rank-2, ...; SMPI's port traced so),
        # libcollkit's linear (MPICH's scattered) in increasing order.
        "linear": "basic_linear",
        # ompi_coll_base_alltoall_intra_pairwise: step i = 1..p-1 sends to
        # rank+i for every p (libcollkit's pairwise is MPICH's, rank XOR i
        # when p = 2^k), step p to itself, which ompi_coll_base_sendrecv makes
        # a local copy: libcollkit's linear_shift at shift 0, which copies
        # its own block after its messages too (tests/python/test_parity.py).
        "pairwise": "linear_shift",
        "modified_bruck": "bruck",  # log2 p steps to rank+2^k (0->1, 2, 4 at 8 ranks)
        "linear_sync": "linear_sync",
        "two_proc": "two_proc",
    },
}

# Segment sizes set with the forcing. Forced, tuned passes
# coll_tuned_<coll>_algorithm_segmentsize (default 0 = one segment) to the
# segmented algorithms. Where the canonical name promises segments we set them:
# "chain" is a pipeline in libcollkit's 64 KiB segments (checked: 256 KiB then
# moves as 4 messages per hop instead of 1), and a segmented_ring with no
# segment size is exactly the ring (identical op-call pattern); 1 MiB is the
# segment tuned's own fixed rules use for it.
SEGMENT_BYTES: dict[tuple[str, str], int] = {
    ("bcast", "pipeline"): 64 * 1024,
    ("reduce", "pipeline"): 64 * 1024,
    ("allreduce", "segmented_ring"): 1024 * 1024,
}

# Conditions outside which tuned silently runs another algorithm (or fails).
# Each seen on this machine; count is the test point's count.
REQUIRES: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("allgather", "recursive_doubling"): (("pow2_ranks",), "otherwise Open MPI silently runs bruck"),
    ("allgather", "neighbor"): (("even_ranks",), "otherwise Open MPI silently runs ring"),
    ("allgather", "two_proc"): (("two_ranks",), "otherwise the call fails with MPI_ERR_UNSUPPORTED_OPERATION"),
    ("alltoall", "two_proc"): (("two_ranks",), "otherwise the call fails with MPI_ERR_UNSUPPORTED_OPERATION"),
    ("allreduce", "ring"): (("count_ge_ranks",), "otherwise Open MPI silently runs recursive_doubling"),
    ("allreduce", "segmented_ring"): (("count_ge_ranks",), "otherwise Open MPI silently runs recursive_doubling"),
    ("allreduce", "rabenseifner"): (("count_ge_pow2",), "otherwise Open MPI silently runs basic_linear"),
    ("reduce", "rabenseifner"): (("count_ge_pow2",), "otherwise Open MPI silently runs linear"),
    ("bcast", "scatter_allgather"): (("count_ge_ranks",), "otherwise Open MPI silently runs linear"),
    ("bcast", "scatter_allgather_ring"): (("count_ge_ranks",), "otherwise Open MPI silently runs linear"),
}

# Enumerator values that are not algorithms.
EXCLUDE = {"ignore": "no forcing: tuned's own decision rules (the default)"}

# coll components that may rank above tuned without taking its intra-
# communicator collectives: self only serves MPI_COMM_SELF, inter only
# inter-communicators; sync, monitoring, cuda and accelerator wrap the
# component below them and call it.
PASS_THROUGH = frozenset({"self", "inter", "sync", "monitoring", "cuda", "accelerator", "ftagree"})

_ENUM = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+)_algorithm:enumerator:value:(-?\d+):(.+)$")
_VALUE = re.compile(r"^mca:coll:(\w+):param:(\w+):value:(.*)$")
_COMPONENT = re.compile(r"^mca:coll:(\w+):version:")
# Any framework's parameter: its type and enumerators (backends/parameters.py).
_PARAM_TYPE = re.compile(r"^mca:\w+:\w+:param:(\w+):type:(\w+)$")
_PARAM_ENUM = re.compile(r"^mca:\w+:\w+:param:(\w+):enumerator:value:(-?\d+):(.+)$")
_VERSION = re.compile(r"^ompi:version:full:(.+)$")


@dataclass(frozen=True)
class OmpiInfo:
    version: str
    components: tuple[str, ...]              # coll components present
    enumerators: dict[str, list[tuple[str, str]]]  # tuned param stem -> [(id, name)]
    values: dict[str, str]                   # coll parameter -> current value
    priorities: dict[str, int]               # coll component -> priority
    # every MCA parameter ompi_info lists (all frameworks): name -> type, and enumerators
    types: dict[str, str] = field(default_factory=dict)
    param_enums: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def parse(text: str) -> OmpiInfo:
    """Read ``ompi_info --parsable --all --level 9`` output."""
    version = ""
    components: list[str] = []
    enums: dict[str, list[tuple[str, str]]] = {}
    values: dict[str, str] = {}
    priorities: dict[str, int] = {}
    types: dict[str, str] = {}
    param_enums: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        if m := _PARAM_TYPE.match(line):
            types[m.group(1)] = m.group(2)
        elif m := _PARAM_ENUM.match(line):
            param_enums.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
        if m := _ENUM.match(line):
            enums.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
        elif m := _VALUE.match(line):
            comp, param, value = m.groups()
            values[param] = value
            if param == f"coll_{comp}_priority":
                try:
                    priorities[comp] = int(value)
                except ValueError:
                    pass
        elif m := _COMPONENT.match(line):
            if m.group(1) not in components and m.group(1) != "base":
                components.append(m.group(1))
        elif m := _VERSION.match(line):
            version = m.group(1).strip()
    return OmpiInfo(version, tuple(components), enums, values, priorities, types, param_enums)


def canonical(collective: str, native: str) -> str:
    return NAMES.get(collective, {}).get(native, native.lower().replace("-", "_"))


def _blockers(info: OmpiInfo) -> list[str]:
    """coll components that would take collectives away from tuned."""
    tuned = info.priorities.get("tuned", 0)
    return sorted(c for c, prio in info.priorities.items()
                  if c != "tuned" and c not in PASS_THROUGH and prio > tuned)


def default_readback(collective: str) -> tuple[str, ...]:
    return ("coll_tuned_use_dynamic_rules", f"coll_tuned_{tuned_param(collective)}_algorithm")


def tuned_env(offer: LibraryOffer, rules_file: str, companion: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a `tuned:FILE` launch: tuned's dynamic rules on, read
    from `rules_file`, and every collective's algorithm parameter at 0 ("ignore",
    not forced), so that the file decides even where the caller's environment
    forces one; components ranked above tuned are excluded as for forcing; the
    file's companion settings (its sidecar's "environment", none for Open MPI
    files collkit writes) first, so that they cannot undo the above."""
    env = dict(companion or {})
    env |= {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
           "OMPI_MCA_coll_tuned_dynamic_rules_filename": rules_file}
    for alg in offer.algorithms:
        if "OMPI_MCA_coll" in alg.env:
            env["OMPI_MCA_coll"] = alg.env["OMPI_MCA_coll"]
        env[f"OMPI_MCA_coll_tuned_{tuned_param(alg.collective)}_algorithm"] = "0"
    return env


def tuned_readback(collective: str) -> tuple[str, ...]:
    """MPI_T variables of a `tuned:FILE` point: the default's, and the file name as Open MPI holds it."""
    return (*default_readback(collective), "coll_tuned_dynamic_rules_filename")


def build_offer(info: OmpiInfo, tool: str = "") -> LibraryOffer:
    where = f" ({tool})" if tool else ""
    if "tuned" not in info.components or not info.enumerators:
        raise UserError(f"Open MPI{where} reports no coll/tuned algorithms, so none can be forced")
    library = f"Open MPI {info.version}" if info.version else "Open MPI"

    common = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}
    extra_readback: list[str] = []
    blockers = _blockers(info)
    if blockers:
        common["OMPI_MCA_coll"] = "^" + ",".join(blockers)
        extra_readback.append("coll")
    rules_file = info.values.get("coll_tuned_dynamic_rules_filename", "")
    if rules_file:
        # A rules file would override the forced id.
        common["OMPI_MCA_coll_tuned_dynamic_rules_filename"] = ""
        extra_readback.append("coll_tuned_dynamic_rules_filename")

    algorithms: list[LibraryAlgorithm] = []
    excluded: list[Excluded] = []
    defaults: dict[str, str] = {}
    default_native: dict[str, tuple[str, str]] = {}
    enums: dict[str, dict[str, str]] = {"coll_tuned_use_dynamic_rules": {"0": "false", "1": "true"}}
    for coll in COLLECTIVES:
        stem = tuned_param(coll)
        entries = info.enumerators.get(stem)
        if not entries:
            continue
        param = f"coll_tuned_{stem}_algorithm"
        enums[param] = dict(entries)
        used: set[str] = set()
        for native_id, native in sorted(entries, key=lambda e: int(e[0])):
            if native in EXCLUDE:
                excluded.append(Excluded(coll, native, EXCLUDE[native], native_id))
                default_native[coll] = (native, native_id)
                continue
            name = canonical(coll, native)
            if name in used:  # a future release reusing a name: keep them apart
                name = f"{native.lower().replace('-', '_')}_{native_id}"
            used.add(name)
            # Forced per point: the id (and segment size) through MPI_T, read by tuned when
            # the point's own communicator is made (module docstring, "Switching at run time").
            cvars = {param: native_id}
            readback = [*default_readback(coll)]
            seg = SEGMENT_BYTES.get((coll, native))
            seg_param = f"{param}_segmentsize"
            if seg and seg_param in info.values:
                cvars[seg_param] = str(seg)
                readback.append(seg_param)
            requires, note = REQUIRES.get((coll, native), ((), ""))
            requires = ("several_ranks", *requires)
            algorithms.append(LibraryAlgorithm(
                collective=coll, name=name, native=native, native_id=native_id, env=dict(common),
                readback=tuple(readback + extra_readback), requires=requires, note=note, cvars=cvars,
                fresh_comm=True))
        rules = f"; dynamic rules file {rules_file} is set" if rules_file else ""
        defaults[coll] = ("coll/tuned picks per call from its fixed decision rules "
                          f"(communicator size, message size){rules}")
    params = {name: ompi_parameter(name, t, info.param_enums.get(name, [])) for name, t in info.types.items()}
    return LibraryOffer(mpi="openmpi", library=library, algorithms=tuple(algorithms),
                        defaults=defaults, default_native=default_native,
                        excluded=tuple(excluded), enums=enums, tool=tool, parameters=params,
                        launch_env=dict(common))


def find_tool(mpi: MPIInstall) -> Path:
    """ompi_info next to the install's mpirun (Debian: /usr/bin/ompi_info)."""
    run = Path(mpi.mpirun)
    suffix = ".openmpi" if run.name.endswith(".openmpi") else ""
    tried: list[Path] = []
    for folder in dict.fromkeys([run.parent, run.resolve().parent]):
        for name in dict.fromkeys([f"ompi_info{suffix}", "ompi_info"]):
            cand = folder / name
            tried.append(cand)
            if cand.is_file():
                return cand
    raise UserError(f"cannot find ompi_info next to {run} (looked for "
                    f"{', '.join(str(t) for t in tried)}); run collkit where this Open MPI is installed "
                    "(on a cluster: the login node), or install openmpi-bin")


# ompi_info's arguments for every parameter of every framework, with enumerators and types
INFO_ARGS = ("--parsable", "--all", "--level", "9")


def discover(mpi: MPIInstall, tool: Path) -> LibraryOffer:
    text = run_tool([str(tool), *INFO_ARGS], env=mpi.environment())
    return build_offer(parse(text), tool=str(tool))


def check_ids(tf, offer: LibraryOffer) -> None:
    """Every algorithm id of an Open MPI rules file is one this Open MPI has: an
    unknown id is not checked when Open MPI parses the file, and makes the call
    fail with MPI_ERR_ARG (0 means: tuned's fixed rules). `tf`: a campaign/tuning.py
    TuningFile."""
    stems = {tuned_param(c): c for c in COLLECTIVES}
    for coll, comms in ompi_rules.rules(tf.data).items():
        ours = stems.get(coll)
        if ours is None:
            continue    # a collective collkit does not measure: its ids are not listed here
        ids = {int(a.native_id) for a in offer.for_collective(ours)} | {0}
        for comm, msgs in comms:
            for size, alg in msgs:
                if alg not in ids:
                    raise UserError(f"{tf.source}: {coll} at {comm} ranks, {size} B names algorithm {alg}, "
                                    f"which {offer.library} does not have (ids: {', '.join(map(str, sorted(ids)))}; "
                                    "0: the fixed rules)")


# An id no Open MPI has: its rules-file parser accepts it, and every call it selects
# then fails (tune/proof.py's broken copy).
BROKEN_ID = "99"


def broken_rules(text: str) -> str:
    """The rules file with every algorithm id set to BROKEN_ID: release builds report
    nothing about a malformed file, so a run that still passed would mean the file was
    never consulted."""
    out = []
    for line in text.splitlines():
        body, hash_, comment = line.partition("#")
        f = body.split()
        if len(f) == 4:
            f[1] = BROKEN_ID
            line = " ".join(f) + (f" #{comment}" if hash_ else "")
        out.append(line)
    return "\n".join(out) + "\n"


RUNTIME_SWITCH = RuntimeSwitch(
    per_call=False, new_communicators=True,
    how=("MPI_T_cvar_write of coll_tuned_<coll>_algorithm (writable; coll_tuned_use_dynamic_rules=1 must be set "
         "at start-up, it is read-only): read when a communicator is created, so only communicators created "
         "after the write (MPI_Comm_dup) run the new algorithm"),
    evidence=("ompi/mca/coll/tuned/coll_tuned_module.c: tuned_module_enable -> COLL_TUNED_EXECUTE_IF_DYNAMIC -> "
              "ompi_coll_tuned_forced_getvalues copies the variable into the communicator's "
              "tuned_module->user_forced[]; coll_tuned_decision_dynamic.c: "
              "ompi_coll_tuned_allreduce_intra_dec_dynamic reads user_forced[ALLREDUCE].algorithm. Checked on "
              "Open MPI 4.1.4: after the write MPI_COMM_WORLD kept its algorithm, a duplicate ran the new one"))


class OpenMPIBackend(ToolBackend):
    """Open MPI: forcing through coll/tuned's MCA variables, its classic rules file."""

    family = "openmpi"
    forcing_knobs = "MCA variables"
    runtime_switch = RUNTIME_SWITCH
    tuning_format = "openmpi"
    tuning_file_kind = "an Open MPI rules file"
    tuning_file_variable = "coll_tuned_dynamic_rules_filename"
    own_variables = re.compile(r"OMPI_MCA_[a-z0-9_]{1,96}")
    broken_how = f"every algorithm id set to {BROKEN_ID}"

    def find_tool(self, install: MPIInstall) -> Path:
        return find_tool(install)

    def read_offer(self, install: MPIInstall, tool: Path) -> LibraryOffer:
        return discover(install, tool)

    def listing(self, install: MPIInstall) -> str:
        return run_tool([str(find_tool(install)), *INFO_ARGS], env=install.environment())

    def default_readback(self, collective: str) -> tuple[str, ...]:
        return default_readback(collective)

    def serving_components(self, install: MPIInstall, ranks: int, env: dict[str, str],
                           program: Path) -> dict[str, str]:
        # Not an MPI_T variable: Open MPI exposes the choice only in coll_base_verbose
        # output, so it takes a launch of its own (backends/ompi_components.py).
        return ompi_components.probe(install, ranks, env, program)

    def parameter_variable(self, name: str) -> str:
        # Open MPI reads an MCA parameter from the environment as OMPI_MCA_<name>.
        return f"OMPI_MCA_{name}"

    def env_flags(self, env: dict[str, str]) -> list[str]:
        # Open MPI's mpirun forwards only the variables -x names.
        return [flag for key, value in env.items() for flag in ("-x", f"{key}={value}")]

    def check_tuning_file(self, tf, offer: LibraryOffer, collectives: tuple[str, ...]) -> None:
        check_ids(tf, offer)

    def tuned_env(self, offer: LibraryOffer, path: str, companion: dict[str, str] | None = None,
                  ranks: int | None = None, text: str | None = None) -> dict[str, str]:
        return tuned_env(offer, path, companion)     # one file for every process count

    def tuned_readback(self, collective: str) -> tuple[str, ...]:
        return tuned_readback(collective)

    def proof_env(self, path: Path, ranks: int) -> dict[str, str]:
        # Every collective's id at 0 ("ignore"), as in tuned_env: Open MPI 5.0 consults a
        # forced id before the file (coll_tuned_decision_dynamic.c; 4.1 the other way
        # round), so a forcing left in the caller's environment would hide the file.
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path.resolve()),
                **{f"OMPI_MCA_coll_tuned_{tuned_param(c)}_algorithm": "0" for c in COLLECTIVES}}

    def broken_copy(self, text: str) -> str:
        return broken_rules(text)

    def switch_setting(self, offer: LibraryOffer, algorithm: LibraryAlgorithm) -> tuple[str, int] | None:
        return f"coll_tuned_{tuned_param(algorithm.collective)}_algorithm", int(algorithm.native_id)

    def cuda_aware(self, install: MPIInstall) -> gpu_mpi.CudaAware:
        return gpu_mpi.from_ompi_info(run_tool([str(find_tool(install)), "--parsable", "--all"],
                                               install.environment()))
