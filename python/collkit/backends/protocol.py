"""What an MPI family is to collkit: one class per family answers every question whose
answer depends on the family, so that no caller outside backends/ compares family names.

Modelled on launch/protocol.py: :class:`MPIBackend` is the abstract base, each family
module has one subclass (openmpi.OpenMPIBackend, mpich.MPICHBackend, smpi.SMPIBackend),
:class:`DefaultOnlyBackend` serves every MPI collkit cannot force, and
backends/families.py is the one place that lists them and picks one
(`backend_for(MPIInstall | family)`, `platform_backend(platform, name)`). A backend is
stateless apart from what picks it (SMPI: the library it stands for and the
collkit-bench it runs), so the same object answers for every install of its family.

A backend answers:

* `discover(install)`: the library's offer (backends/offer.py); Open MPI and MPICH read it
  from the library's own tool (:class:`ToolBackend`: ompi_info, mpivars), cached per
  process, SMPI from SimGrid; `forcing_source(install)` says where it came from for
  `collkit mpis`; `listing(install)` is the tool's full output for metadata.json;
* `default_readback(collective)`: the MPI_T variables an unforced point records;
* `serving_components(install, ranks, env, program)`: which of the library's own
  components serves each collective on MPI_COMM_WORLD under that launch (Open MPI's
  coll framework; {} where the library has no such choice or cannot say);
* `parameter_variable(name)`: the environment variable that sets a library parameter
  (``[parameters.NAME]``);
* `env_flags(env)`: the launcher's flags that give every rank these variables;
* tuning files: `tuning_format` (its `collkit tune --format` name, "" where the library
  reads none) and `other_tuning_formats` (Intel MPI's JSON tree), `reads(format)`,
  `tuning_file_kind` / `file_kind(format)`, `check_tuning_file` (what the library would not report
  itself), `tuned_env` / `tuned_readback` (a campaign's `tuned:FILE` point and `collkit
  trial --rules FILE`), `proof_env` / `broken_copy` / `broken_how` / `refusal_sign`
  (tune/proof.py: the file is shown read by a run that must fail, or warn, with a
  broken copy);
* `cuda_aware(install)`: whether the library takes device buffers (backends/gpu_mpi.py);
* `runtime_switch`: whether an algorithm can be changed while the program runs, per call
  or per new communicator (:class:`RuntimeSwitch`; the self-tuning preload of issue #42
  needs it), each family's value with its evidence; `switch_setting(offer, algorithm)`:
  the MPI_T variable and value that make the change."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from collkit.backends.gpu_mpi import CudaAware
from collkit.backends.offer import LibraryAlgorithm, LibraryOffer, default_only
from collkit.common.errors import UserError
from collkit.mpis.identity import derivative
from collkit.mpis.install import MPIInstall


@dataclass(frozen=True)
class RuntimeSwitch:
    """Whether a running program can change the library's algorithm for a collective.

    `per_call`: a new value takes effect on the next call on a communicator that already
    exists (MPI_COMM_WORLD included). `new_communicators`: it takes effect on communicators
    created after the change (MPI_Comm_dup), not on older ones. `how`: the mechanism
    (which variable, written how); `evidence`: the library's source files and functions
    that decide it, and the check run here."""
    per_call: bool
    new_communicators: bool
    how: str
    evidence: str

    def to_json(self) -> dict:
        return {"per_call": self.per_call, "new_communicators": self.new_communicators, "how": self.how,
                "evidence": self.evidence}


class MPIBackend(ABC):
    """One MPI family. Subclasses fill the class attributes and override what their
    library does differently; the defaults are those of a library collkit cannot force."""

    family: ClassVar[str] = ""             # "openmpi", "mpich", "smpi"; "" for DefaultOnlyBackend
    forcing_knobs: ClassVar[str] = ""      # what forcing sets, for `collkit mpis` ("MCA variables")
    runtime_switch: ClassVar[RuntimeSwitch]
    tuning_format: ClassVar[str] = ""      # the library's own tuning-file format (`collkit tune --format`)
    # further formats the same library reads (Intel MPI: its JSON tree beside the
    # I_MPI_ADJUST settings); the methods below tell a file's format by its content
    other_tuning_formats: ClassVar[tuple[str, ...]] = ()
    tuning_file_kind: ClassVar[str] = ""   # that file, in words ("an Open MPI rules file")
    tuning_file_variable: ClassVar[str] = ""   # the MPI_T control variable naming that file (records read it back)
    # the library's own environment variables, which a tuning file's companion settings
    # (FILE.provenance.json's "environment") may set and nothing else may
    own_variables: ClassVar[re.Pattern | None] = None
    broken_how: ClassVar[str] = ""         # how broken_copy breaks a file, in words
    # a line of a proof run's output that shows the library refused a broken copy where
    # it goes on and exits 0 (Intel MPI); "": only a failing exit status shows it
    refusal_sign: ClassVar[str] = ""

    # ---------------------------------------------------------- choosing
    @classmethod
    def serves(cls, family: str) -> bool:
        """Whether this backend is the one of `family` (an MPIInstall's family)."""
        return bool(cls.family) and family == cls.family

    # ---------------------------------------------------------- discovery
    @abstractmethod
    def discover(self, install: MPIInstall) -> LibraryOffer:
        """What the library offers (UserError with one line where it cannot be asked)."""

    def forcing_source(self, install: MPIInstall) -> str:
        """One line for `collkit mpis`: where forcing comes from, or why there is none."""
        try:
            offer = self.discover(install)
        except UserError as exc:
            return f"none: {exc}"
        if offer.unforceable:
            return f"default only: {offer.unforceable}"
        return f"{offer.library} {self.forcing_knobs} ({offer.tool}), {len(offer.algorithms)} algorithms"

    def listing(self, install: MPIInstall) -> str:
        """The library's full parameter listing (metadata level `full`), as its tool prints it."""
        return f"# not available: collkit reads no parameter listing of {install.name}\n"

    def default_readback(self, collective: str) -> tuple[str, ...]:
        """MPI_T variables to record for an unforced point, so records show the defaults."""
        return ()

    def serving_components(self, install: MPIInstall, ranks: int, env: dict[str, str],
                           program: Path) -> dict[str, str]:
        """Collective -> the library component whose function MPI_COMM_WORLD calls, in a
        launch of `program` at `ranks` ranks with `env`; {} where the library has no
        components to choose between, or does not say which it chose."""
        return {}

    # ---------------------------------------------------------- parameters and launching
    def parameter_variable(self, name: str) -> str:
        """The environment variable that sets the library parameter `name`."""
        return name

    def start_env(self, alg) -> dict[str, str]:
        """The environment that forces `alg` (a LibraryAlgorithm) for a whole launch from
        its start: its launch environment and its per-point settings as start-up
        variables. For proofs that compare whole launches (backends/ompi_monitoring.py);
        campaigns set the per-point settings through MPI_T, for one point."""
        return {**alg.env, **{self.parameter_variable(k): v for k, v in alg.cvars.items()}}

    def env_flags(self, env: dict[str, str]) -> list[str]:
        """Launcher flags that give every rank these variables. MPICH's hydra and the
        launchers of its derivatives take -genv NAME VALUE, the form an MPI of no known
        family gets too."""
        flags: list[str] = []
        for key, value in env.items():
            flags += ["-genv", key, value]
        return flags

    # ---------------------------------------------------------- the library's tuning files
    def tuning_formats(self) -> tuple[str, ...]:
        """Every tuning-file format the library reads, its first one first."""
        return (self.tuning_format, *self.other_tuning_formats) if self.tuning_format else ()

    def reads(self, tuning_file_library: str) -> bool:
        """Whether this library reads a tuning file of that format (campaign/tuning.py's
        `TuningFile.library`, told by the file's content)."""
        return tuning_file_library in self.tuning_formats()

    def file_kind(self, fmt: str) -> str:
        """A file of format `fmt`, in words, for messages."""
        return self.tuning_file_kind

    def _no_tuning_files(self) -> UserError:
        return UserError(f"{self.family or 'this MPI'} reads no tuning file collkit writes; "
                         "use an Open MPI, MPICH or Intel MPI library (collkit mpis)")

    def check_tuning_file(self, tf, offer: LibraryOffer, collectives: tuple[str, ...]) -> None:
        """Refuse, before any launch, a file the library would misread where it would not
        say so itself. `tf`: campaign/tuning.py's TuningFile."""
        raise self._no_tuning_files()

    def tuned_env(self, offer: LibraryOffer, path: str, companion: dict[str, str] | None = None,
                  ranks: int | None = None, text: str | None = None) -> dict[str, str]:
        """The environment that makes the library read its tuning file `path` and decide,
        in a launch of `ranks` processes (None: not known to collkit; Intel MPI's file
        has lines per process count). `text`: the file's content where the caller has it
        (a campaign plans its points before it writes the copy `path` names)."""
        raise self._no_tuning_files()

    def tuned_readback(self, collective: str) -> tuple[str, ...]:
        """MPI_T variables of a point run under a tuning file."""
        return self.default_readback(collective)

    def proof_env(self, path: Path, ranks: int) -> dict[str, str]:
        """The environment of tune/proof.py's runs at `ranks` processes: the file
        loaded, and nothing else allowed to choose (an algorithm the file names that
        cannot run is an error)."""
        raise self._no_tuning_files()

    def broken_copy(self, text: str) -> str:
        """A copy of a tuning file the library must refuse or fail with, once read."""
        raise self._no_tuning_files()

    # ---------------------------------------------------------- the library's own autotuner
    autotuner: ClassVar[str] = ""          # the library's run-time autotuner, in words ("" where none)

    def autotuner_env(self, dump: Path) -> dict[str, str]:
        """The environment that runs the library's own autotuner on the program's calls
        and has it write its tuning state to `dump` at MPI_Finalize."""
        raise UserError(f"{self.family or 'this MPI'} has no autotuner of its own that collkit can start "
                        "(Intel MPI's, I_MPI_TUNING_MODE=auto, is the one it knows)")

    def tuning_dump_env(self, dump: Path) -> dict[str, str]:
        """The environment that has the library write its tuning state to `dump` without
        its autotuner: what a default run's dump is compared with."""
        return {}

    # ---------------------------------------------------------- switching while running
    def switch_setting(self, offer: LibraryOffer, algorithm: LibraryAlgorithm) -> tuple[str, int] | None:
        """The MPI_T control variable, and the integer to write to it, that select
        `algorithm` while the program runs (when it takes effect: `runtime_switch`);
        None where the library has no such variable."""
        return None

    # ---------------------------------------------------------- device buffers
    def cuda_aware(self, install: MPIInstall) -> CudaAware:
        """Whether the library takes CUDA device buffers, from its own reports."""
        raise UserError(f"collkit cannot ask {install.name} whether it is CUDA-aware (not an Open MPI or MPICH "
                        "derivative it knows)")


class DefaultOnlyBackend(MPIBackend):
    """An MPI of no family collkit knows (LAM, a vendor MPI outside the Open MPI and MPICH
    families): it runs its default only, with the reason in every listing and campaign;
    it records no MPI_T variables, reads no tuning file, and its launcher is given
    variables hydra's way (-genv)."""

    runtime_switch = RuntimeSwitch(
        per_call=False, new_communicators=False,
        how="collkit does not know how to choose this library's algorithms",
        evidence="no family collkit knows")

    @classmethod
    def serves(cls, family: str) -> bool:
        return True

    def discover(self, install: MPIInstall) -> LibraryOffer:
        return default_only(install, f"{install.kind or install.name} is not of an MPI family "
                                     "collkit knows how to force (Open MPI, MPICH and its derivatives, Intel MPI)")


# Discovery runs one short program (~0.1-0.3 s here), so an in-memory cache per
# process is enough. The key holds the tool's path and mtime and the library's
# own environment variables, which change what the tools report (priorities,
# a dynamic rules file, the device-collectives setting).
_CACHE: dict[tuple, LibraryOffer] = {}
_ENV_PREFIXES = ("OMPI_MCA_", "MPIR_CVAR_", "MPIR_PARAM_", "MPICH_", "I_MPI_")


def clear_cache() -> None:
    _CACHE.clear()


class ToolBackend(MPIBackend):
    """A library that lists what it can be forced to run through a tool of its own,
    found next to its launcher. A derivative (Cray MPICH, MVAPICH: identity.derivative)
    whose tool is missing or unreadable offers its default only, with the reason; the
    family's own library without its tool is an error (a broken installation)."""

    @abstractmethod
    def find_tool(self, install: MPIInstall) -> Path:
        """The tool's path, or UserError naming where it was looked for."""

    @abstractmethod
    def read_offer(self, install: MPIInstall, tool: Path) -> LibraryOffer:
        """Run the tool and read the offer from its output."""

    def discover(self, install: MPIInstall) -> LibraryOffer:
        borrowed = derivative(install.kind, install.family)
        try:
            tool = self.find_tool(install)
        except UserError as exc:
            if borrowed:
                return default_only(install, str(exc))
            raise
        key = _cache_key(install, tool)
        if key not in _CACHE:
            try:
                _CACHE[key] = self.read_offer(install, tool)
            except UserError as exc:
                if borrowed:
                    return default_only(install, str(exc))
                raise
        return _CACHE[key]


def _cache_key(install: MPIInstall, tool: Path) -> tuple:
    try:
        mtime = tool.stat().st_mtime_ns
    except OSError:
        mtime = 0
    env = install.environment()
    relevant = tuple(sorted((k, v) for k, v in env.items() if k.startswith(_ENV_PREFIXES)))
    return (install.name, install.family, str(tool), mtime, relevant)
