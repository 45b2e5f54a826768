"""What a device backend is to collkit: a backend that is not an MPI library's own
collectives nor libcollkit's, but a library of its own with its own benchmark program
(NCCL on GPUs: backends/nccl.py, docs/gpu.md).

Modelled on protocol.py's MPIBackend: :class:`DeviceBackend` is the abstract base, each
such library has one subclass in its module, and backends/devices.py is the one list of
them. The spec, the planner, points' labels, metadata, `collkit run`, `collkit list
--parameters` and `collkit mpis` ask every backend of that list the same questions and
never name one, so a device backend is added here, in backends/, and nowhere else.

A device backend answers:

* `key`: its ``[backends]`` key, the `backend` of its points and records, and the name
  its points are labelled by ('nccl:ring.ll128': its points belong to no MPI library,
  although an MPI's launcher starts them);
* `tables` / `spec_fields(raw, selected)`: the spec's top-level tables only it reads
  (``[gpu]``), checked, as the Spec fields they set;
* `parameter_table`, `parameters()`, `parameter_variable(name)`, `library`,
  `parameters_title`: its ``[parameters.NAME]`` table, what that table may name, the
  environment variable that sets a parameter, and how messages and `collkit list
  --parameters` call it;
* `points(spec, platform, point)`: its points, every name checked first; `point` is
  plan.py's maker of a Point (the fields every backend shares, plus the given ones), so
  that backends/ builds no campaign data class itself (campaign/spec.py imports the list of
  device backends, and points.py imports spec.py: tests/python/test_import_cycles.py);
* `launch_platform(spec, platform)`: the platform launching its benchmark program;
* `metadata_key` / `metadata()`: its section of metadata.json;
* `prerequisites()`: what `collkit mpis` reports found or missing for it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar

from collkit.backends.parameters import Parameter


@dataclass(frozen=True)
class Prerequisite:
    """One line of `collkit mpis`'s installation table: found where, or how to get it."""
    what: str
    found: bool
    where: str
    fix: str

    def to_json(self) -> dict:
        return {"what": self.what, "found": self.found, "where": self.where, "fix": self.fix}


class DeviceBackend(ABC):
    key: ClassVar[str]                      # [backends] key, Point.backend, the label's prefix
    library: ClassVar[str]                  # what messages call the library ("NCCL")
    tables: ClassVar[tuple[str, ...]] = ()  # top-level spec tables only this backend reads
    metadata_key: ClassVar[str]             # its section of metadata.json
    parameters_title: ClassVar[str]         # its table's title in `collkit list --parameters`

    @property
    def parameter_table(self) -> str:
        """The NAME of its [parameters.NAME] table: its key."""
        return self.key

    @abstractmethod
    def spec_fields(self, raw: dict, selected: bool) -> dict[str, object]:
        """The Spec fields its tables in the spec `raw` set (none present: {}); `selected`:
        the spec's [backends] names it. UserError for a bad table or one without it."""

    @abstractmethod
    def parameters(self) -> dict[str, Parameter]:
        """What its [parameters.NAME] table may name."""

    def parameter_variable(self, name: str) -> str:
        """The environment variable that sets parameter `name`: the name itself unless
        the library reads it under another."""
        return name

    @abstractmethod
    def points(self, spec, platform, point: Callable[..., object]) -> list:
        """Its points of `spec` (a Spec whose [backends] names it) on `platform`.
        `point(spec, collective, ranks, size, **fields)` makes one Point. UserError where
        the platform cannot run it or a name is unknown."""

    @abstractmethod
    def launch_platform(self, spec, platform):
        """The platform that launches its points (its benchmark program); UserError when
        it cannot (not built, no device here, a spec setting it cannot honour)."""

    @abstractmethod
    def metadata(self) -> dict:
        """Its section of metadata.json; what cannot be read is empty, never an error."""

    @abstractmethod
    def prerequisites(self) -> list[Prerequisite]:
        """What it needs on this machine, for `collkit mpis`."""
