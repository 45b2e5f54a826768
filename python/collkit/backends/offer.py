"""What an MPI library offers collkit, as data: every algorithm it can be forced to run
(:class:`LibraryAlgorithm`), the values of its knob collkit leaves out (:class:`Excluded`),
and the whole offer (:class:`LibraryOffer`) that `collkit list` prints and the planner
resolves a spec's names against.

These are the records every backend module fills (openmpi.py, mpich.py, smpi.py) and
every caller reads; they know no family, so a family module imports this one and never
the package (backends/__init__.py), which imports the families (no import cycle)."""

from __future__ import annotations

from dataclasses import dataclass, field

from collkit.backends.parameters import Parameter
from collkit.common.errors import UserError, did_you_mean
from collkit.library.registry import COLLECTIVES, check_collective
from collkit.mpis.install import MPIInstall

# Conditions outside which a library does not run an algorithm as named: it
# either substitutes another one silently (Open MPI) or fails the call or even
# MPI_Init (MPICH with MPIR_CVAR_COLLECTIVE_FALLBACK=error). Each was observed
# on this machine; see the notes in openmpi.py and mpich.py.
REQUIREMENTS = {
    "pow2_ranks": "a power-of-two number of ranks",
    "even_ranks": "an even number of ranks",
    "two_ranks": "exactly 2 ranks",
    "count_ge_ranks": "count >= number of ranks",
    "count_ge_pow2": "count >= the largest power of two not above the number of ranks",
    "in_place": "MPI_IN_PLACE",
    "one_rank_per_node": "at most one rank per node",
    # Open MPI: coll/self serves a one-rank communicator whatever tuned is told
    # (backends/ompi_components.py), so a forced tuned algorithm would not run there
    "several_ranks": "two or more ranks (coll/self serves one rank, not tuned)",
}


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def met(requirement: str, ranks: int, count: int, in_place: bool, ranks_per_node: int) -> bool:
    if requirement == "pow2_ranks":
        return ranks > 0 and ranks & (ranks - 1) == 0
    if requirement == "even_ranks":
        return ranks % 2 == 0
    if requirement == "two_ranks":
        return ranks == 2
    if requirement == "count_ge_ranks":
        return count >= ranks
    if requirement == "count_ge_pow2":
        return count >= _pow2_floor(ranks)
    if requirement == "in_place":
        return in_place
    if requirement == "one_rank_per_node":
        return ranks_per_node <= 1
    if requirement == "several_ranks":
        return ranks >= 2
    raise ValueError(f"unknown requirement {requirement!r}")


@dataclass(frozen=True)
class LibraryAlgorithm:
    collective: str            # collkit collective name
    name: str                  # canonical name ("ring", ...)
    native: str                # the library's own name, e.g. "ring" or "reduce_scatter_allgather"
    native_id: str             # Open MPI id ("4") or MPICH CVAR value ("ring")
    env: dict[str, str]        # environment that forces it
    readback: tuple[str, ...]  # MPI_T control variables showing the forcing took
    requires: tuple[str, ...] = ()  # keys of REQUIREMENTS
    # MPI_T control variables collkit-bench sets after MPI_Init, for this point
    # only (the `set` key of docs/bench-protocol.md): MPICH's algorithm CVARs,
    # which set through the environment would also bind MPI_Init's own collectives.
    cvars: dict[str, str] = field(default_factory=dict)
    note: str = ""             # what the library does outside `requires`, or other caveats
    # The cvars take effect when a communicator is made (Open MPI's coll/tuned reads
    # them at communicator creation): the point runs on a duplicate of MPI_COMM_WORLD
    # made after they are set (collkit-bench's `comm=fresh`).
    fresh_comm: bool = False

    def unusable(self, ranks: int, count: int, in_place: bool = False,
                 ranks_per_node: int | None = None) -> str | None:
        """Why the library would not run this algorithm as named at this point, or None.

        ``count`` is the test point's count (whole vector for bcast, reduce,
        allreduce; one rank's block otherwise). ``ranks_per_node`` defaults to
        all ranks on one node, as in a local launch."""
        per_node = ranks if ranks_per_node is None else ranks_per_node
        missing = [r for r in self.requires if not met(r, ranks, count, in_place, per_node)]
        if not missing:
            return None
        needs = " and ".join(REQUIREMENTS[r] for r in missing)
        reason = f"{self.native} needs {needs}"
        return f"{reason} ({self.note})" if self.note else reason

    def to_json(self) -> dict:
        return {
            "collective": self.collective,
            "name": self.name,
            "native": self.native,
            "native_id": self.native_id,
            "env": dict(self.env),
            "cvars": dict(self.cvars),
            "readback": list(self.readback),
            "requires": list(self.requires),
            "note": self.note,
            **({"fresh_comm": True} if self.fresh_comm else {}),
        }


@dataclass(frozen=True)
class Excluded:
    """A value of the library's algorithm knob that collkit does not offer, and why."""

    collective: str
    native: str
    reason: str
    native_id: str = ""


@dataclass(frozen=True)
class LibraryOffer:
    mpi: str                   # the family whose backend made it (backends/protocol.py); on a simulated
                               # platform the library SMPI stands for (smpi, openmpi, mpich)
    library: str               # e.g. "Open MPI 4.1.4", "MPICH 5.0.2"
    algorithms: tuple[LibraryAlgorithm, ...]
    defaults: dict[str, str]   # collective -> one-line description of how the library chooses by default
    default_native: dict[str, tuple[str, str]] = field(default_factory=dict)  # collective -> (native, id) of "no forcing"
    excluded: tuple[Excluded, ...] = ()
    # MPI_T variable -> {raw value -> name}: MPI_T gives MPICH's algorithm CVARs
    # as plain integers (their position in mpivars' list), Open MPI's as ids.
    enums: dict[str, dict[str, str]] = field(default_factory=dict)
    tool: str = ""             # the program whose output this offer was read from
    unforceable: str = ""      # set: collkit cannot force this library's algorithms, and why
    # the library's parameters a spec may sweep ([parameters.NAME]), by name (backends/parameters.py)
    parameters: dict[str, Parameter] = field(default_factory=dict)
    # The environment under which the library's default, libcollkit's algorithms and the
    # algorithms forced per point (cvars) share one launch, so that comparisons among
    # them are made inside launches (campaign/plan.py, analysis/launches.py); None: its
    # forcing needs a launch of its own.
    launch_env: dict[str, str] | None = None

    def for_collective(self, collective: str) -> list[LibraryAlgorithm]:
        coll = check_collective(collective)
        return [a for a in self.algorithms if a.collective == coll]

    def force(self, collective: str, name: str) -> LibraryAlgorithm:
        """UserError (collkit.common.errors) with a did-you-mean suggestion (difflib) when unknown; accepts canonical or native name or native id."""
        coll = check_collective(collective)
        algs = self.for_collective(coll)
        # Canonical names first: Open MPI's bcast "pipeline" is canonical
        # "chain", while its native "chain" is canonical "multi_chain".
        for key in ("name", "native", "native_id"):
            for alg in algs:
                if getattr(alg, key) == name:
                    if key != "name" and _names_another(coll, name):
                        # Open MPI's allreduce "rabenseifner" is not libcollkit's
                        # rabenseifner: a shared name promises the same messages,
                        # so the library's own name is not accepted for it.
                        raise UserError(f"{self.library}'s {coll} '{name}' sends other messages than "
                                        f"libcollkit's {name} (docs/algorithms.md, name parity); "
                                        f"force it as '{alg.name}'")
                    return alg
        for ex in self.excluded:
            if ex.collective == coll and name in (ex.native, ex.native_id):
                raise UserError(f"{self.library} {coll} algorithm '{name}' is not offered: {ex.reason}")
        offered = ", ".join(a.name for a in algs) or "none"
        if name.lstrip("-").isdigit() and algs and all(a.native_id.lstrip("-").isdigit() for a in algs):
            # a library that numbers its algorithms (Open MPI's ids): list the numbers
            ids = ", ".join(f"{a.native_id} {a.native}" for a in algs)
            raise UserError(f"{self.library} has no {coll} algorithm with id {name} (ids: {ids})")
        candidates = sorted({a.name for a in algs} | {a.native for a in algs})
        extra = did_you_mean(name, candidates)
        raise UserError(f"{self.library} cannot be forced to run '{name}' for {coll}{extra}; "
                        f"it offers: {offered}")

    def decode(self, variable: str, value: str) -> str:
        """A read-back value by its name where the library reports a number."""
        return self.enums.get(variable, {}).get(str(value), str(value))

    def to_json(self) -> dict:
        return {
            "mpi": self.mpi,
            "library": self.library,
            "tool": self.tool,
            "unforceable": self.unforceable,
            "defaults": {c: {"description": self.defaults[c],
                             "native": self.default_native.get(c, ("", ""))[0],
                             "native_id": self.default_native.get(c, ("", ""))[1]}
                         for c in COLLECTIVES if c in self.defaults},
            "algorithms": [a.to_json() for a in self.algorithms],
            "excluded": [{"collective": e.collective, "native": e.native, "native_id": e.native_id,
                          "reason": e.reason} for e in self.excluded],
            **({"launch_env": dict(self.launch_env)} if self.launch_env is not None else {}),
        }


def default_only(mpi: MPIInstall, reason: str) -> LibraryOffer:
    """What an MPI offers when collkit cannot force its algorithms: its
    default, with the reason recorded in every listing and campaign."""
    return LibraryOffer(mpi=mpi.family or mpi.name, library=mpi.name, algorithms=(),
                        defaults={c: f"the library's own choice (no forcing: {reason})" for c in COLLECTIVES},
                        tool="", unforceable=reason)


def _names_another(collective: str, name: str) -> bool:
    """True when name is a libcollkit registry algorithm of this collective;
    False where the registry is not built (nothing to confuse it with)."""
    from collkit.library import registry
    try:
        return any(a.collective == collective and a.name == name for a in registry.load())
    except UserError:
        return False
